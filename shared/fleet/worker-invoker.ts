/**
 * Starts worker invocations: the port the kick, the scaler and the timekeeper's hand-over use, and its
 * Lambda implementation (an asynchronous Invoke, as Scheduler's own ticks are). Starting one is a
 * hint, never a correctness step: a lost or throttled Invoke only means the next tick, poll or kick
 * finds the work, so failures are logged and counted, never thrown at the enqueue that caused them.
 */
import { LambdaAsyncInvoke } from './lambda-invoke.js';
import type { SeatReservation } from './fleet-seats.js';
import { TUNING } from '../tuning.js';

/** The scheduled tick's event source (cdk/schedules.ts): the floor, started every minute whether or not there is work. */
export const SCHEDULED_TICK_SOURCE = 'leasehold.worker';
/** Why an invocation was started (its event's `source`; the scheduled tick's is SCHEDULED_TICK_SOURCE). */
export type InvocationSource = 'leasehold.kick' | 'leasehold.scale' | 'leasehold.due';

/**
 * Where the task that caused a kick waits: the started invocation reads that partition first, or, with
 * the task's id and ready key, takes it by key without a read (the ready index may not show it yet).
 */
export interface LookFirst {
  type: string;
  shard: number;
  taskId?: string;
  readySk?: string;
}

/** A ready task a kick hands to the invocation it starts, by key: taken with one write, no read. */
export interface OfferedTask {
  taskId: string;
  type: string;
  shard: number;
  readySk: string;
}

/** What the starter knows that helps the started invocation. */
export interface StartHints {
  /** Where a task that caused a kick waits, when the kick could not hand it over by key: read it first. */
  lookFirst?: LookFirst;
  /**
   * The tasks that caused a kick, by key: the invocation takes them, and returns when they have ended
   * (it reads the ready partitions only if its seat is rung or a hand-over fails).
   */
  offers?: OfferedTask[];
  /** The kick stands for tasks it could not hand over by key: the invocation reads the ready partitions. */
  readAll?: boolean;

  /** Many tasks fall due at this instant: stay up for it and look often just after it. */
  expectWorkAt?: number;
  /**
   * Started only so that delayed work has a timekeeper (a delayed task was enqueued, or a run left
   * retries waiting): it takes seat 0 or, when another invocation keeps time already, returns at once.
   */
  keepTime?: boolean;
  /** The seat reserved for this invocation by whoever started it (fleet-seats.ts, reserve/adopt). */
  seat?: SeatReservation;
  /**
   * How many self-starts led to this invocation (chain-invoker.ts): 0 for the scheduled tick and for
   * kicks from the API or the fire function, its starter's plus one for a scale-up, hand-over or prewarm.
   */
  generation?: number;
}

/** The event a worker invocation started by Leasehold receives. */
export type WorkerStartEvent = { source: InvocationSource } & StartHints;

export interface WorkerInvoker {
  /** Starts one worker invocation; resolves false when the request failed (never rejects). */
  start(source: InvocationSource, hints?: StartHints): Promise<boolean>;
}

export class LambdaWorkerInvoker implements WorkerInvoker {
  /** Invokes sent and failed, for the process's figures and tests. */
  readonly counts = { sent: 0, failed: 0 };

  constructor(
    private readonly functionName: string,
    private readonly client: Pick<LambdaAsyncInvoke, 'invoke'> = new LambdaAsyncInvoke(),
    private readonly warn: (message: string, detail: Record<string, unknown>) => void = () => undefined,
  ) {}

  async start(source: InvocationSource, hints: StartHints = {}): Promise<boolean> {
    const event: WorkerStartEvent = { source, ...hints };
    try {
      await this.client.invoke(
        this.functionName,
        JSON.stringify(event),
        AbortSignal.timeout(TUNING.kick.invokeDeadlineMs),
      );
      this.counts.sent++;
      return true;
    } catch (error) {
      this.counts.failed++;
      this.warn('starting a worker invocation failed; the next tick or poll finds the work', {
        source,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
      return false;
    }
  }
}
