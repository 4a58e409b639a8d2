/**
 * The local stack's stand-in for EventBridge Scheduler: every second it fires the ticks that fell due
 * since its last look. Every running stack does this; the tick's idempotency key makes it one task.
 * Ticks that fell while no stack was running are not caught up (as EventBridge drops old events).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../worker/outcome.js';
import type { ScheduleService } from './schedule-service.js';

export class LocalScheduleTicker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private last: number;

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

  private async tick(): Promise<void> {
    const now = this.clock.now();
    try {
      for (const { name, scheduledTime } of await this.schedules.dueTicks(this.last, now)) {
        const outcome = await this.schedules.fire(name, scheduledTime);
        this.logger.info('schedule fired', { schedule: name, scheduledTime: new Date(scheduledTime).toISOString(), ...outcome });
      }
      this.last = now;
    } catch (error) {
      // The same window is looked at again next time: a tick fired twice is still one task.
      this.logger.error('schedule tick failed', { error: describeError(error) });
    }
  }
}
