/**
 * Retries this worker scheduled are promoted to the ready index by this worker when their backoff
 * ends, with one write by key and no query; if the worker is gone by then, the recovery sweep
 * promotes them. The worker also asks it whether work is on its way (a retry due soon keeps an idle
 * worker alive).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { LeaseEvents } from '../events.js';
import type { LeaseStore } from '../store/ports.js';
import type { Task } from '../task-model.js';
import type { TimerSet } from './timers.js';
import { TUNING } from '../tuning.js';

export interface RetryPromoterDeps {
  store: Pick<LeaseStore, 'promote'>;
  clock: Clock;
  timers: TimerSet;
  events: LeaseEvents;
  logger: Logger;
  /** Told when a promotion settled (the worker looks for work again). */
  onSettled: () => void;
}

export class RetryPromoter {
  /** Retries waiting (task id -> due time): work this worker knows is coming. */
  private readonly pending = new Map<string, number>();
  private lastPromotedAt = 0;

  constructor(private readonly deps: RetryPromoterDeps) {}

  /** When this worker last promoted a retry (0: never). */
  get promotedAt(): number {
    return this.lastPromotedAt;
  }

  /** Retries scheduled and not yet promoted. */
  get waiting(): number {
    return this.pending.size;
  }

  /** Whether a retry falls due within `ms`. */
  dueWithin(ms: number): boolean {
    const now = this.deps.clock.now();
    for (const due of this.pending.values()) if (due - now <= ms) return true;
    return false;
  }

  /**
   * Promotes `task` when it falls due. A timer that fires early by this worker's own clock re-arms
   * without a write, so no timer fault can turn into a loop of writes (a backoff past Node's timer
   * limit once fired every millisecond; TimerSet now steps it).
   */
  schedule(task: Task): void {
    const { clock, timers } = this.deps;
    this.pending.set(task.id, task.availableAt);
    timers.timeout(
      () => {
        if (clock.now() < task.availableAt) return this.schedule(task);
        void this.promote(task);
      },
      Math.max(0, task.availableAt - clock.now()) + TUNING.poll.retryPastDueMs,
    );
  }

  private async promote(task: Task): Promise<void> {
    const { store, clock, events, logger } = this.deps;
    try {
      if (await store.promote({ id: task.id })) {
        this.lastPromotedAt = clock.now();
        events.emit('task:promoted', { taskId: task.id });
      } else if (clock.now() < task.availableAt) return this.schedule(task);
      this.pending.delete(task.id);
    } catch (error) {
      this.pending.delete(task.id);
      logger.warn('promotion failed; recovery will promote the task', { error: describeError(error) });
    } finally {
      this.deps.onSettled();
    }
  }
}
