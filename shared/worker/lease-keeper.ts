/**
 * The one owner of the leases a worker holds (as BullMQ's LockManager is): it tracks each running
 * task's lease and progress, renews them all from one heartbeat timer, measures how late that timer
 * fires (a blocked event loop), and tells each task's holder when its lease is lost or a cancel was
 * requested. An execution only reads its lease (when it writes its outcome) and reports progress.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { LeaseEvents } from '../events.js';
import type { Lease, ProgressReport } from '../task-inputs.js';
import type { LeaseStore } from '../store/ports.js';
import { renewRound } from './renewal-round.js';
import type { TimerHandle, TimerSet } from './timers.js';

/** How the keeper reaches a lease's holder. */
export interface LeaseHolder {
  lost(): void;
  cancelRequested(): void;
}

export interface LeaseKeeperDeps {
  store: Pick<LeaseStore, 'renew'>;
  clock: Clock;
  timers: TimerSet;
  events: LeaseEvents;
  logger: Logger;
  heartbeatIntervalMs: number;
  /** Monotonic milliseconds for the lag measure (performance.now in production). */
  monotonic: () => number;
}

interface Entry {
  lease: Lease;
  progress: ProgressReport | undefined;
  holder: LeaseHolder;
  /** Known gone: no more renewals. */
  lost: boolean;
}

/** One tracked lease, as its execution sees it. */
export interface KeptLease {
  /** The lease as last renewed. */
  readonly lease: Lease;
  /** The last progress report (rides on the next renewal; written with a failure or a release). */
  readonly progress: ProgressReport | undefined;
  report(progress: ProgressReport): void;
  /** Renews this lease now (TaskContext.heartbeat). */
  renewNow(): Promise<void>;
  /** The outcome write begins: renewals stop (they would only race it). Returns the lease to write under. */
  stopRenewing(): Lease;
}

export class LeaseKeeper {
  private readonly entries = new Map<string, Entry>();
  private round: Promise<void> | undefined;
  /** A tick found a round in flight: the next round renews every lease. */
  private fullRoundOwed = false;
  private timer: TimerHandle | undefined;
  private rounds = 0;
  private maxLag = 0;

  constructor(private readonly deps: LeaseKeeperDeps) {}

  /** Leases tracked now. */
  get size(): number {
    return this.entries.size;
  }

  /** Renewal rounds run, and the largest heartbeat lag seen, since this keeper was made. */
  get figures(): { rounds: number; maxLagMs: number } {
    return { rounds: this.rounds, maxLagMs: this.maxLag };
  }

  track(lease: Lease, holder: LeaseHolder): KeptLease {
    const entry: Entry = { lease, progress: undefined, holder, lost: false };
    this.entries.set(lease.taskId, entry);
    return {
      get lease() {
        return entry.lease;
      },
      get progress() {
        return entry.progress;
      },
      report: (progress) => void (entry.progress = progress),
      renewNow: () => this.renew([entry]),
      stopRenewing: () => {
        if (this.entries.get(lease.taskId) === entry) this.entries.delete(lease.taskId);
        return entry.lease;
      },
    };
  }

  /** Arms the heartbeat timer; nothing runs until this is called. */
  start(): void {
    if (this.timer) return;
    const interval = this.deps.heartbeatIntervalMs;
    let expected = this.deps.monotonic() + interval;
    this.timer = this.deps.timers.interval(() => {
      const now = this.deps.monotonic();
      const lag = Math.round(Math.max(0, now - expected));
      expected = now + interval;
      this.maxLag = Math.max(this.maxLag, lag);
      this.deps.events.emit('heartbeat', { lagMs: lag });
      if (lag > interval)
        this.deps.logger.warn(
          'event loop blocked past a heartbeat interval; a CPU-bound handler should call heartbeat()',
          { lagMs: lag },
        );
      // One round at a time: a slow round is not stacked on by the next tick. The tick is owed a full
      // round instead, taken as soon as the current one ends (a handler calling heartbeat() in a
      // loop keeps single-lease rounds going, and must not starve every other lease).
      if (this.round) this.fullRoundOwed = true;
      else void this.renew([]);
    }, interval);
  }

  /** Disarms the timer and waits for a round in flight. */
  async stop(): Promise<void> {
    this.deps.timers.clear(this.timer);
    this.timer = undefined;
    while (this.round) await this.round.catch(() => undefined);
  }

  /**
   * One renewal round over the given entries (every tracked lease when a full round is owed, or
   * for a tick: `[]`); tells holders of lost leases and cancel requests.
   */
  private async renew(entries: Entry[]): Promise<void> {
    while (this.round) await this.round.catch(() => undefined);
    const full = this.fullRoundOwed || entries.length === 0;
    this.fullRoundOwed = false;
    const live = (full ? [...this.entries.values()] : entries).filter((e) => !e.lost && this.isTracked(e));
    if (live.length === 0) return;
    const round = this.renewLive(live);
    this.round = round;
    try {
      await round;
    } catch (error) {
      this.deps.logger.error('renewal round failed', { error: describeError(error) });
    } finally {
      this.round = undefined;
    }
  }

  private async renewLive(live: Entry[]): Promise<void> {
    this.rounds++;
    const progress = Object.fromEntries(
      live.flatMap((e) => (e.progress ? [[e.lease.taskId, e.progress]] : [])),
    );
    // One answer per lease even when the round fails as a whole, so every lease reaches the switch below.
    const outcomes = await renewRound(
      this.deps.store,
      live.map((e) => e.lease),
      progress,
      this.deps.logger,
    );
    for (const [i, outcome] of outcomes.entries()) {
      const entry = live[i]!;
      // Every answer is told (a renewal DynamoDB applied is part of the task's history)...
      this.deps.events.emit('renew', {
        taskId: outcome.taskId,
        token: entry.lease.token,
        outcome: outcome.outcome,
        ...('lease' in outcome ? { leaseUntil: outcome.lease.leaseUntil } : {}),
      });
      // ...but once its outcome write began, that write decides, not this answer.
      if (!this.isTracked(entry)) continue;
      switch (outcome.outcome) {
        case 'renewed':
          entry.lease = outcome.lease;
          break;
        case 'cancel-requested':
          entry.lease = outcome.lease;
          entry.holder.cancelRequested();
          break;
        case 'lost':
          this.lose(entry);
          break;
        case 'error':
          this.deps.logger.warn('lease renewal failed', {
            taskId: outcome.taskId,
            error: describeError(outcome.error),
          });
          // Unknown whether we still hold it: once our own view says it ran out, stop the handler.
          if (this.deps.clock.now() >= entry.lease.leaseUntil) this.lose(entry);
          break;
      }
    }
  }

  private lose(entry: Entry): void {
    entry.lost = true;
    this.deps.events.emit('lease:lost', { taskId: entry.lease.taskId, token: entry.lease.token });
    entry.holder.lost();
  }

  private isTracked(entry: Entry): boolean {
    return this.entries.get(entry.lease.taskId) === entry;
  }
}
