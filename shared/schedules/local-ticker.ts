/**
 * The local stack's stand-in for EventBridge Scheduler: every second it fires the ticks that fell due
 * since its last look. Every running stack does this; the tick's idempotency key makes it one task.
 * Ticks that fell while no stack was running are not caught up (as EventBridge drops old events).
 *
 * Each tick is fired on its own: one schedule whose fire fails (whoever owns it) cannot stop the others,
 * and the window moves on regardless. A failed tick is retried a few times with a growing delay, as
 * EventBridge retries a failed delivery, then left as the failure its fire record shows.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { ValidationError } from '../errors.js';
import { describeError } from '../errors.js';
import type { FireRequest, ScheduleService } from './schedule-service.js';

/** Deliveries of one tick in all; the delay before each retry (EventBridge retries a failed one too). */
export const LOCAL_FIRE_ATTEMPTS = 3;
export const LOCAL_RETRY_DELAYS_MS = [5_000, 30_000] as const;

interface PendingTick extends FireRequest {
  /** The delivery this will be: 1 for the first. */
  attempt: number;
  dueAt: number;
}

export class LocalScheduleTicker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private last: number;
  /** Failed ticks waiting for their next delivery, by schedule and scheduled time. */
  private readonly retries = new Map<string, PendingTick>();

  constructor(
    private readonly schedules: ScheduleService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly everyMs = 1_000,
  ) {
    this.last = clock.now();
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.tick());
    }, this.everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Failed ticks still to be delivered again (for tests and diagnostics). */
  get pendingRetries(): number {
    return this.retries.size;
  }

  /** One look: fires what fell due since the last one, then the retries that are due. Never throws. */
  async tick(): Promise<void> {
    const now = this.clock.now();
    let due: FireRequest[];
    try {
      due = await this.schedules.dueTicks(this.last, now, (name, error) =>
        this.logger.error('schedule skipped: its ticks cannot be computed', {
          schedule: name,
          error: describeError(error),
        }),
      );
    } catch (error) {
      // Nothing was fired: the same window is looked at again next time.
      this.logger.error('schedule tick failed: could not read the schedules', {
        error: describeError(error),
      });
      return;
    }
    this.last = now;
    const retries = [...this.retries.values()].filter((r) => r.dueAt <= now);
    for (const r of retries) this.retries.delete(keyOf(r));
    for (const tick of [...due.map((t) => ({ ...t, attempt: 1, dueAt: now })), ...retries])
      await this.deliver(tick, now);
  }

  private async deliver(tick: PendingTick, now: number): Promise<void> {
    const scheduledTime = new Date(tick.scheduledTime).toISOString();
    try {
      const outcome = await this.schedules.fire(tick);
      this.logger.info('schedule fired', {
        schedule: tick.name,
        scheduledTime,
        attempt: tick.attempt,
        ...outcome,
      });
    } catch (error) {
      // fire() recorded the failure on the tick. Bad input (a definition the task type now refuses) fails the same way every time.
      const retry = !(error instanceof ValidationError) && tick.attempt < LOCAL_FIRE_ATTEMPTS;
      if (retry)
        this.retries.set(keyOf(tick), {
          ...tick,
          attempt: tick.attempt + 1,
          dueAt: now + LOCAL_RETRY_DELAYS_MS[tick.attempt - 1]!,
        });
      this.logger.error('schedule fire failed', {
        schedule: tick.name,
        scheduledTime,
        attempt: tick.attempt,
        willRetry: retry,
        error: describeError(error),
      });
    }
  }
}

const keyOf = (t: FireRequest) => `${t.owner}\u0000${t.name}\u0000${t.scheduledTime}`;
