/**
 * Scale with the backlog: a worker whose claim round filled every free slot tells the scaler, which
 * starts one more invocation while the fleet is below its cap (at most one per worker per interval,
 * so the fleet at most doubles per interval and stops growing once rounds no longer fill). Idle
 * invocations return after the idle window, so the fleet shrinks by itself when the backlog is gone.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import { belowCap, scaleUpDue } from './fleet-rules.js';
import type { FleetSeats } from './fleet-seats.js';
import type { WorkerInvoker } from './worker-invoker.js';

/** How often one worker may add an invocation: about a cold start, so the fleet grows as fast as it can start. */
export const SCALE_INTERVAL_MS = 1_000;

export class FleetScaler {
  private lastScaleAt = Number.NEGATIVE_INFINITY;
  private readonly inFlight = new Set<Promise<void>>();
  /** Invocations this scaler started (figures and tests). */
  started = 0;

  constructor(
    private readonly deps: {
      seats: Pick<FleetSeats, 'running' | 'cap'>;
      invoker: WorkerInvoker;
      clock: Clock;
      logger: Pick<Logger, 'warn'>;
      intervalMs?: number;
    },
  ) {}

  /** The worker's last round filled every free slot. */
  saturated(): void {
    const now = this.deps.clock.now();
    // Checked before the fleet is read, so a saturated worker reads the seats at most once per interval.
    if (!scaleUpDue(now, this.lastScaleAt, this.deps.intervalMs ?? SCALE_INTERVAL_MS)) return;
    this.lastScaleAt = now;
    const step = this.addOne();
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
      const { seats, invoker, logger } = this.deps;
      try {
        const room = seats.cap - (await seats.running());
        const wanted = Math.min(room, Math.ceil(count / tasksPerWorker));
        const started = await Promise.all(
          Array.from({ length: Math.max(0, wanted) }, () =>
            invoker.start('leasehold.due', { expectWorkAt: at }),
          ),
        );
        this.started += started.filter(Boolean).length;
      } catch (error) {
        logger.warn('reading the fleet failed; the burst starts on the running workers', {
          error: describeError(error),
        });
      }
    })();
    this.inFlight.add(step);
    void step.finally(() => this.inFlight.delete(step));
  }

  /** Waits for invocations still being started (Lambda freezes the process after the handler returns). */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  private async addOne(): Promise<void> {
    const { seats, invoker, logger } = this.deps;
    try {
      if (!belowCap(await seats.running(), seats.cap)) return;
      if (await invoker.start('leasehold.scale')) this.started++;
    } catch (error) {
      logger.warn('reading the fleet failed; not scaling up this time', { error: describeError(error) });
    }
  }
}
