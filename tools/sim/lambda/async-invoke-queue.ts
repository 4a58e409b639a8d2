/**
 * Lambda's internal queue for asynchronous invocations of one function (what EventBridge Scheduler's
 * invocations go through). A function error is retried after one minute, then two (up to
 * MaximumRetryAttempts, default 2); a throttled attempt goes back on the queue with a backoff from 1 s
 * up to 5 minutes, and is given up once older than MaximumEventAgeInSeconds (default 6 hours); an
 * event Lambda's recursive loop detection stops is not run at all. What is given up goes to the
 * on-failure destination with Lambda's record, if one is configured. Each event keeps the trace
 * lineage it was sent with, so the invocation it becomes is the next hop of its chain.
 * (Lambda developer guide, "Asynchronous invocation", PutFunctionEventInvokeConfig and "Lambda
 * recursive loop detection".)
 */
import { randomUUID } from 'node:crypto';
import type { InvocationResult } from './execution-environment.js';
import { LambdaError } from './lambda-error.js';
import type { Lineage } from './trace-lineage.js';

export interface AsyncInvokeConfig {
  maximumRetryAttempts: number;
  maximumEventAgeMs: number;
  onFailure?: string;
  onSuccess?: string;
}

/** Lambda's defaults where a function has no EventInvokeConfig. */
export const LAMBDA_ASYNC_DEFAULTS: AsyncInvokeConfig = {
  maximumRetryAttempts: 2,
  maximumEventAgeMs: 6 * 3_600_000,
};

/** Waits after the first and the second failed attempt. */
const ERROR_RETRY_DELAYS_MS = [60_000, 120_000];
const THROTTLE_BACKOFF_MAX_MS = 300_000;

export type DestinationSender = (
  destinationArn: string,
  fromFunctionArn: string,
  record: string,
) => Promise<void>;

interface QueuedEvent {
  requestId: string;
  payload: string;
  receivedAt: number;
  attempts: number;
  throttles: number;
  lineage: Lineage | undefined;
}

/** Why an event was given up: Lambda's conditions, and the sim's name for a stopped recursive loop. */
type GiveUpCondition = 'RetriesExhausted' | 'EventAgeExceeded' | 'RecursiveInvocationDetected';

export class AsyncInvokeQueue {
  private readonly timers = new Set<NodeJS.Timeout>();
  private pending = 0;
  private closed = false;

  constructor(
    private readonly functionArn: string,
    private readonly config: AsyncInvokeConfig,
    private readonly run: (payload: string, lineage: Lineage | undefined) => Promise<InvocationResult>,
    private readonly destinations: DestinationSender,
    private readonly log: (line: string) => void,
  ) {}

  get size(): number {
    return this.pending;
  }

  enqueue(payload: string, lineage?: Lineage): string {
    const event: QueuedEvent = {
      requestId: randomUUID(),
      payload,
      receivedAt: Date.now(),
      attempts: 0,
      throttles: 0,
      lineage,
    };
    this.pending++;
    this.later(event, 0);
    return event.requestId;
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private later(event: QueuedEvent, ms: number): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      void this.attempt(event);
    }, ms);
    this.timers.add(t);
  }

  private async attempt(event: QueuedEvent): Promise<void> {
    if (Date.now() - event.receivedAt > this.config.maximumEventAgeMs)
      return this.giveUp(event, 'EventAgeExceeded', undefined);
    let result: InvocationResult;
    try {
      result = await this.run(event.payload, event.lineage);
    } catch (error) {
      if (error instanceof LambdaError && error.code === 'TooManyRequestsException') {
        event.throttles++;
        // The backoff never waits past the event's age: the event is given up when it expires, not later.
        const left = event.receivedAt + this.config.maximumEventAgeMs - Date.now() + 1;
        const backoff = Math.min(
          THROTTLE_BACKOFF_MAX_MS,
          1_000 * 2 ** (event.throttles - 1),
          Math.max(0, left),
        );
        return this.later(event, backoff);
      }
      if (error instanceof LambdaError && error.code === 'RecursiveInvocationException')
        return this.giveUp(event, 'RecursiveInvocationDetected', undefined);
      this.log(`sim: async invocation ${event.requestId} could not run: ${String(error)}`);
      return this.giveUp(event, 'RetriesExhausted', undefined);
    }
    event.attempts++;
    if (!result.functionError) {
      this.pending--;
      if (this.config.onSuccess) await this.send(this.config.onSuccess, event, 'Success', result);
      return;
    }
    if (event.attempts <= this.config.maximumRetryAttempts) {
      this.log(
        `sim: async invocation ${event.requestId} failed (${result.errorType}); Lambda retries it in ${ERROR_RETRY_DELAYS_MS[event.attempts - 1]! / 1000} s`,
      );
      return this.later(event, ERROR_RETRY_DELAYS_MS[event.attempts - 1]!);
    }
    return this.giveUp(event, 'RetriesExhausted', result);
  }

  private async giveUp(
    event: QueuedEvent,
    condition: GiveUpCondition,
    result: InvocationResult | undefined,
  ): Promise<void> {
    this.pending--;
    this.log(
      `sim: async invocation ${event.requestId} dropped (${condition}, ${event.attempts} attempts)${this.config.onFailure ? `; sent to ${this.config.onFailure}` : '; no on-failure destination'}`,
    );
    if (this.config.onFailure) await this.send(this.config.onFailure, event, condition, result);
  }

  private async send(
    destination: string,
    event: QueuedEvent,
    condition: string,
    result: InvocationResult | undefined,
  ): Promise<void> {
    const parse = (text: string) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    };
    const record = {
      version: '1.0',
      timestamp: new Date().toISOString(),
      requestContext: {
        requestId: event.requestId,
        functionArn: `${this.functionArn}:$LATEST`,
        condition,
        approximateInvokeCount: event.attempts,
      },
      requestPayload: parse(event.payload),
      responseContext: {
        statusCode: 200,
        executedVersion: '$LATEST',
        ...(result?.functionError ? { functionError: result.functionError } : {}),
      },
      ...(result ? { responsePayload: parse(result.payload) } : {}),
    };
    await this.destinations(destination, this.functionArn, JSON.stringify(record)).catch((error: unknown) =>
      this.log(`sim: destination ${destination} refused the record: ${String(error)}`),
    );
  }
}
