/**
 * Scale with the backlog: a worker whose claim round filled every free slot tells the scaler, which
 * starts one more invocation while the fleet is below its cap (at most one per worker per interval,
 * so the fleet at most doubles per interval and stops growing once rounds no longer fill). Idle
 * invocations return after the idle window, so the fleet shrinks by itself when the backlog is gone.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import { scaleUpDue } from './fleet-rules.js';
import type { FleetSeats } from './fleet-seats.js';
import type { InvocationSource, StartHints, WorkerInvoker } from './worker-invoker.js';
import { startIntoSeat } from './reserved-start.js';
import { TUNING } from '../tuning.js';

export class FleetScaler {
  private lastScaleAt = Number.NEGATIVE_INFINITY;
  private readonly inFlight = new Set<Promise<void>>();
  /** Invocations this scaler started (figures and tests). */
  started = 0;

  constructor(
    private readonly deps: {
      seats: Pick<FleetSeats, 'reserve' | 'release'>;
      invoker: WorkerInvoker;
      clock: Clock;
      logger: Pick<Logger, 'warn'>;
      intervalMs?: number;
    },
  ) {}

  /**
   * The worker's last round filled every free slot. `burstAt`: it was taking a burst of due delayed
   * tasks; the new invocation is told so and reads what is left of it from the delay partitions (a
   * plain one would read every ready partition, which the burst's tasks never enter).
   */
  saturated(burstAt?: number): void {
    const now = this.deps.clock.now();
    // Checked before the fleet is read, so a saturated worker reads the seats at most once per interval.
    if (!scaleUpDue(now, this.lastScaleAt, this.deps.intervalMs ?? TUNING.fleet.scaleIntervalMs)) return;
    this.lastScaleAt = now;
    const step = this.addOne(burstAt === undefined ? {} : { expectWorkAt: burstAt });
    this.inFlight.add(step);
    void step.finally(() => this.inFlight.delete(step));
  }

  /**
   * Starts invocations that wait for a burst of `count` tasks falling due at `at` (the timekeeper
   * announces it ahead): one per `tasksPerWorker`, within the cap. They stay up for the instant and
   * look often just after it, so the burst starts on many workers at once instead of one growing fleet.
   */
  prewarm(at: number, count: number, tasksPerWorker: number): void {
    const step = (async () => {
      try {
        // One after another: each reserves a seat, and the first that finds none ends it.
        for (let i = 0; i < Math.ceil(count / tasksPerWorker); i++)
          if (!(await this.startWithSeat('leasehold.due', { expectWorkAt: at }))) break;
      } catch (error) {
        this.deps.logger.warn('reading the fleet failed; the burst starts on the running workers', {
          error: describeError(error),
        });
      }
    })();
    this.inFlight.add(step);
    void step.finally(() => this.inFlight.delete(step));
  }

  /**
   * Starts one invocation into a free seat for a run that gave its seat away while taking a backlog (its
   * claim window closed): the backlog keeps its invocation. False when no seat is free or the start failed.
   */
  async refill(): Promise<boolean> {
    try {
      return await this.startWithSeat('leasehold.scale', {});
    } catch (error) {
      this.deps.logger.warn('reading the fleet failed; the backlog waits for a scale-up or the tick', {
        error: describeError(error),
      });
      return false;
    }
  }

  /** Waits for invocations still being started (Lambda freezes the process after the handler returns). */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  private async addOne(hints: StartHints): Promise<void> {
    try {
      await this.startWithSeat('leasehold.scale', hints);
    } catch (error) {
      this.deps.logger.warn('reading the fleet failed; not scaling up this time', {
        error: describeError(error),
      });
    }
  }

  /** Reserves a seat and starts an invocation into it (reserved-start.ts); false when every seat is held. */
  private async startWithSeat(source: InvocationSource, hints: StartHints): Promise<boolean> {
    const seat = await this.deps.seats.reserve();
    if (!seat) return false;
    const sent = await startIntoSeat(this.deps, seat, source, hints);
    if (sent) this.started++;
    return sent;
  }
}
