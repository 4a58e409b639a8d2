/**
 * Fault injection on the client side, at the HTTP exchange of each attempt the SDK makes (inside its
 * retry loop): a request can be stopped before it is sent, or sent (and applied by DynamoDB) and its
 * answer replaced by a dropped connection, our own deadline, or an error response. Error responses are
 * real HTTP responses (awsJson 1.0 bodies), so the SDK turns them into its own exception classes
 * (ThrottlingException, InternalServerError, ...) with the metadata and retry classification of the
 * real thing.
 *
 * A rule picks requests by operation (and the partition key of the item they touch) and faults the
 * nth matching request, and optionally the ones after it; it can be armed by another rule having fired
 * (e.g. "once the claim write lost its answer, every read-back fails").
 *
 * Build the client with a short retry strategy (see `fastRetryStrategy`) so the SDK's own backoff
 * (100 ms base, 500 ms for throttling) does not slow tests down.
 */
import { Readable } from 'node:stream';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';

export type FaultKind =
  /** Applied; the connection drops before the answer arrives (ECONNRESET). The SDK retries. */
  | 'lost-network'
  /** Applied; our AbortSignal deadline fires before the answer arrives. The SDK gives up, the store resends. */
  | 'lost-deadline'
  /** Our deadline fires before the request is sent: it never reaches DynamoDB. */
  | 'deadline-before'
  /** Answered 400 ThrottlingException, not applied. The SDK retries. */
  | 'throttled'
  /** Answered 400 ProvisionedThroughputExceededException, not applied. The SDK retries. */
  | 'throughput-exceeded'
  /** Answered 500 InternalServerError, not applied. The SDK retries. */
  | 'server-error-before'
  /** Applied, then answered 500 InternalServerError. The SDK retries, and the retry meets the first attempt's write. */
  | 'server-error-after';

/** Whether the faulted request reached DynamoDB (and so may have applied). */
export const FAULT_APPLIES: Record<FaultKind, boolean> = {
  'lost-network': true,
  'lost-deadline': true,
  'deadline-before': false,
  throttled: false,
  'throughput-exceeded': false,
  'server-error-before': false,
  'server-error-after': true,
};

export type DynamoOperation =
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'GetItem'
  | 'Query'
  | 'Scan'
  | 'BatchGetItem'
  | 'BatchWriteItem'
  | 'TransactWriteItems';

export interface FaultRule {
  operation: DynamoOperation;
  fault: FaultKind;
  /** Only requests on an item whose partition key matches (a prefix, or a pattern). */
  pk?: string | RegExp;
  /** The first matching request to fault, counting from 1 (default 1). */
  nth?: number;
  /** How many matching requests to fault from the nth on (default 1; Infinity: every one). */
  times?: number;
  /** Armed only once this rule has fired: matching requests before that are neither counted nor faulted. */
  after?: FaultHandle;
  /** Called as the rule fires, before the fault (e.g. to move a manual clock while the answer is "on its way"). */
  onFire?: () => void;
}

export interface FaultEvent {
  operation: string;
  pk: string | undefined;
  fault: FaultKind | undefined;
}

export interface FaultHandle {
  readonly rule: FaultRule;
  /** Matching requests seen while armed. */
  readonly seen: number;
  /** Requests this rule faulted. */
  readonly fired: number;
  disarm(): void;
}

interface RuleState extends FaultHandle {
  seen: number;
  fired: number;
  disarmed: boolean;
}

/** Installs one middleware on `client`; rules are added and removed while it runs. */
export class FaultInjector {
  private readonly rules: RuleState[] = [];
  /** Every request sent through the client, with the fault it got (if any). */
  readonly log: FaultEvent[] = [];

  constructor(client: DynamoDBClient) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const operation = String(context.commandName ?? '').replace(/Command$/, '');
        const pk = partitionKeyOf(args.input, (args as { request?: { body?: unknown } }).request?.body);
        const rule = this.match(operation, pk);
        this.log.push({ operation, pk, fault: rule?.rule.fault });
        if (!rule) return next(args);
        rule.rule.onFire?.();
        switch (rule.rule.fault) {
          case 'deadline-before':
            throw abortError();
          case 'throttled':
            return {
              response: errorResponse(
                400,
                'ThrottlingException',
                'Rate of requests exceeds the allowed throughput. (injected by the test)',
              ),
            };
          case 'throughput-exceeded':
            return {
              response: errorResponse(
                400,
                'ProvisionedThroughputExceededException',
                'The level of configured provisioned throughput for the table was exceeded. (injected by the test)',
              ),
            };
          case 'server-error-before':
            return {
              response: errorResponse(
                500,
                'InternalServerError',
                'Internal server error (injected by the test, before applying)',
              ),
            };
          default:
            break;
        }
        // The request reaches DynamoDB and applies; its answer is thrown away.
        const out = (await next(args)) as { response?: { body?: unknown } };
        await drain(out.response?.body);
        if (rule.rule.fault === 'lost-network')
          throw Object.assign(new Error('socket hang up (answer dropped by the test)'), {
            code: 'ECONNRESET',
          });
        if (rule.rule.fault === 'lost-deadline') throw abortError();
        return {
          response: errorResponse(
            500,
            'InternalServerError',
            'Internal server error (injected by the test, after applying)',
          ),
        };
      },
      // Innermost of the deserialize step: below the deserializer (it sees the raw HTTP response) and
      // inside the retry middleware (every attempt the SDK makes passes here).
      { step: 'deserialize', name: `faultInjector${Math.random()}`, priority: 'low' },
    );
  }

  inject(rule: FaultRule): FaultHandle {
    const state: RuleState = {
      rule,
      seen: 0,
      fired: 0,
      disarmed: false,
      disarm: () => {
        state.disarmed = true;
      },
    };
    this.rules.push(state);
    return state;
  }

  /** Removes every rule. */
  clear(): void {
    for (const r of this.rules) r.disarmed = true;
    this.rules.length = 0;
  }

  /** Requests of `operation` sent so far (each SDK attempt counts). */
  count(operation: DynamoOperation, pk?: string | RegExp): number {
    return this.log.filter((e) => e.operation === operation && (pk === undefined || matchesPk(pk, e.pk)))
      .length;
  }

  private match(operation: string, pk: string | undefined): RuleState | undefined {
    let chosen: RuleState | undefined;
    for (const r of this.rules) {
      const { rule } = r;
      if (r.disarmed || rule.operation !== operation || (rule.pk !== undefined && !matchesPk(rule.pk, pk)))
        continue;
      if (rule.after && rule.after.fired === 0) continue;
      r.seen++;
      const first = rule.nth ?? 1;
      if (!chosen && r.seen >= first && r.seen < first + (rule.times ?? 1)) {
        r.fired++;
        chosen = r;
      }
    }
    return chosen;
  }
}

/** Adds one rule to a client of its own injector (for one-off use, like lost-answer.ts's dropNextAnswer). */
export function injectFault(client: DynamoDBClient, rule: FaultRule): FaultHandle {
  return new FaultInjector(client).inject(rule);
}

/** The SDK's standard retries (3 attempts by default), 1 ms apart instead of 100-500 ms and more. */
export function fastRetryStrategy(maxAttempts = 3): ConfiguredRetryStrategy {
  return new ConfiguredRetryStrategy(maxAttempts, 1);
}

function matchesPk(want: string | RegExp, pk: string | undefined): boolean {
  if (pk === undefined) return false;
  return typeof want === 'string' ? pk.startsWith(want) : want.test(pk);
}

/** The partition key of the item a request touches (Key of a get/update, Item of a put), marshalled or not. */
function partitionKeyOf(input: unknown, body: unknown): string | undefined {
  const fromObject = (o: unknown): string | undefined => {
    const rec = o as { Key?: Record<string, unknown>; Item?: Record<string, unknown> } | undefined;
    const pk = rec?.Key?.pk ?? rec?.Item?.pk;
    if (typeof pk === 'string') return pk;
    if (pk && typeof pk === 'object' && typeof (pk as { S?: unknown }).S === 'string')
      return (pk as { S: string }).S;
    return undefined;
  };
  const direct = fromObject(input);
  if (direct !== undefined || typeof body !== 'string') return direct;
  try {
    return fromObject(JSON.parse(body));
  } catch {
    return undefined;
  }
}

function abortError(): Error {
  return Object.assign(new Error('Request aborted (deadline, injected by the test)'), { name: 'AbortError' });
}

/** An awsJson 1.0 error response, as DynamoDB sends it. */
function errorResponse(statusCode: number, type: string, message: string) {
  const body = JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message });
  return {
    statusCode,
    reason: statusCode === 500 ? 'Internal Server Error' : 'Bad Request',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'content-length': String(Buffer.byteLength(body)),
      'x-amzn-requestid': `injected-${Math.random().toString(36).slice(2)}`,
    },
    body: Readable.from([Buffer.from(body)]),
  };
}

/** Reads a real response body to its end, so its connection goes back to the pool. */
async function drain(body: unknown): Promise<void> {
  if (body && typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') {
    for await (const _chunk of body as AsyncIterable<unknown>) {
      // discard
    }
  }
}
