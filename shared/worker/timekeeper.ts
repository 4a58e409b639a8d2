/**
 * The timekeeper: the one owner of promotion in a process (a delayed task or a retry moved into the
 * ready index when it falls due). It promotes within a few milliseconds of each due time what it was
 * told of (`expect`: a retry this process's worker scheduled) and, when it reads, what it finds in the
 * delay partitions, whoever delayed it and whether or not they still run: it reads what falls due
 * within the horizon (at start, then every refresh), arms one timer for the earliest due time, and
 * promotes everything due at once in parallel. Each promotion readies the task on the process's
 * stream, so this process's worker claims it at once (and, saturated, scales the fleet).
 *
 * Who reads: in Lambda, the invocation holding the fleet's seat 0 (the others promote only their own
 * retries); in the local stack, its worker. The recovery sweep is the floor under both: once a
 * minute it promotes what no timekeeper did (one that crashed, or none up).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { LeaseEvents } from '../events.js';
import type { Timekeeping } from '../store/ports.js';
import type { DueTask } from '../store/delayed-reads.js';
import type { TimerHandle, TimerSet } from './timers.js';
import { TUNING } from '../tuning.js';

export interface TimekeeperDeps {
  /** Where it promotes. */
  store: Pick<Timekeeping, 'promote'>;
  clock: Clock;
  timers: TimerSet;
  logger: Pick<Logger, 'warn'>;
  /** Told of each promotion that applied ('task:promoted': the worker looks again, the metrics count it). */
  events?: Pick<LeaseEvents, 'emit'>;
  /** Without reads it promotes only what it is told of (expect). */
  reads?: TimekeeperReads;
  /**
   * Told, TUNING.burst.prewarmLeadMs ahead, of an instant at which at least TUNING.burst.minTasks fall due (the
   * scaler starts invocations that wait for it, so the burst starts on many workers, not one).
   */
  onBurstAhead?: (at: number, count: number) => void;
  /**
   * Told, at its instant, of a burst's tasks now due (this invocation's worker claims them straight from
   * their delay partition, as do the workers started ahead of it); the timekeeper promotes what the
   * workers stop taking (see promoteLeft).
   */
  offerDue?: (entries: DueTask[]) => void;
}

/** How a reading timekeeper reads the delay partitions. */
export interface TimekeeperReads {
  /** Where it reads the delay partitions. */
  store: Pick<Timekeeping, 'dueDelayed'>;
  /** How often the delay partitions are read again (tasks delayed meanwhile by anyone). */
  refreshMs: number;
  /**
   * How far ahead each read looks. In Lambda: what an enqueue is kicked for (fleet-rules.ts
   * kickHorizonMs), so none falls between. By default past the next read, with the index's lag to
   * spare (readHorizonMs).
   */
  horizonMs?: number;
}

/** How often a timekeeper reads: its refresh, but not faster than TUNING.timekeeper.minRefreshMs. */
function refreshEveryMs(reads: TimekeeperReads): number {
  return Math.max(TUNING.timekeeper.minRefreshMs, reads.refreshMs);
}

/** How far ahead a read looks: the given horizon, or two reads ahead plus the index's lag. */
function readHorizonMs(reads: TimekeeperReads): number {
  return reads.horizonMs ?? 2 * refreshEveryMs(reads) + TUNING.timekeeper.indexLagMs;
}

export class Timekeeper {
  /** Delayed tasks known to fall due within the horizon: id -> due time. */
  private readonly due = new Map<string, number>();
  /** Being promoted now: a read during the burst (which still shows them delayed) must not queue them again. */
  private readonly promoting = new Set<string>();
  /**
   * Promoted lately: id -> the due time it was promoted for, and when it applied. A read sent before
   * that, or within TUNING.timekeeper.indexLagMs after, listing the same id and due time is stale; with another due
   * time it is a retry delayed anew.
   */
  private readonly promotedLately = new Map<string, { dueAt: number; at: number }>();
  /** A burst's tasks left to the workers for TUNING.burst.graceMs: id -> due time. */
  private readonly deferred = new Map<string, number>();
  private readonly graceTimers = new Set<TimerHandle>();
  private refreshTimer: TimerHandle | undefined;
  private dueTimer: TimerHandle | undefined;
  private dueTimerAt = Number.POSITIVE_INFINITY;
  private stopped = true;
  private refreshing = false;
  /** The seconds whose burst was already announced. */
  private readonly announced = new Set<number>();
  private readonly work = new Set<Promise<void>>();
  /** Told of by expect() and not yet promoted, nor found gone. */
  private readonly expected = new Set<string>();
  private lastPromotedAt = 0;
  /** Promotions that applied (figures and tests). */
  promoted = 0;

  constructor(private readonly deps: TimekeeperDeps) {}

  start(): void {
    this.stopped = false;
    this.arm();
    const { reads } = this.deps;
    if (!reads) return;
    this.track(this.refresh());
    this.refreshTimer = this.deps.timers.interval(() => this.track(this.refresh()), refreshEveryMs(reads));
  }

  /**
   * A task this process delayed (a retry's backoff; locally, an enqueue with a delay) falls due at
   * `dueAt`: promoted then, with one write by key and no read. Told before start(), armed at start.
   */
  expect(id: string, dueAt: number): void {
    if (this.promoting.has(id) || this.deferred.has(id)) return;
    this.expected.add(id);
    this.due.set(id, dueAt);
    this.arm();
  }

  /** Told of by expect() and not yet promoted: left to the next timekeeper or the sweep when it stops. */
  get expectedWaiting(): number {
    return this.expected.size;
  }

  /** When it last promoted a task (0: never). */
  get promotedAt(): number {
    return this.lastPromotedAt;
  }

  /** Stops reading and promoting; waits for what is in flight. What is still due later is left to the next timekeeper. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.deps.timers.clear(this.refreshTimer);
    this.deps.timers.clear(this.dueTimer);
    // A burst's tasks still in their grace are handed over with the rest (nextDueAt counts them).
    for (const grace of this.graceTimers) this.deps.timers.clear(grace);
    this.graceTimers.clear();
    this.dueTimerAt = Number.POSITIVE_INFINITY;
    await Promise.all([...this.work]);
  }

  /** The earliest due time it knows of, if any. */
  get nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const at of [...this.due.values(), ...this.deferred.values()])
      if (next === undefined || at < next) next = at;
    return next;
  }

  /**
   * Once stopped and seat 0 given back: whether any delayed task or retry falls due within the horizon,
   * so its holder hands over (fleet-invocation.ts; TUNING.timekeeper.lastLookDelayMs). An entry this timekeeper
   * promoted lately, still listed by the lagging index, does not count: it would start an invocation
   * only to find the task ready.
   */
  async dueAfterRelease(): Promise<boolean> {
    const { clock, reads } = this.deps;
    if (!reads) return false;
    const sentAt = clock.now();
    const found = await reads.store.dueDelayed({
      before: sentAt + readHorizonMs(reads),
      limit: TUNING.timekeeper.lastLookLimit,
    });
    return found.some(({ id, dueAt }) => !this.staleEntry(id, dueAt, sentAt));
  }

  /** Whether it knows a task falling due within `ms` (the worker stays up for it). */
  dueWithin(ms: number): boolean {
    const next = this.nextDueAt;
    return next !== undefined && next - this.deps.clock.now() <= ms;
  }

  private track(step: Promise<void>): void {
    this.work.add(step);
    void step.finally(() => this.work.delete(step));
  }

  private async refresh(): Promise<void> {
    const { clock, logger, reads } = this.deps;
    // A slow read is not stacked under the next one.
    if (this.refreshing || !reads) return;
    this.refreshing = true;
    try {
      const sentAt = clock.now();
      const found = await reads.store.dueDelayed({
        before: sentAt + readHorizonMs(reads),
        limit: TUNING.timekeeper.readLimit,
      });
      if (this.stopped) return;
      for (const { id, dueAt } of found)
        if (!this.promoting.has(id) && !this.deferred.has(id) && !this.staleEntry(id, dueAt, sentAt))
          this.due.set(id, dueAt);
      // Only one read is in flight at a time: none sent from now on can be stale about these.
      this.forgetPromotionsBefore(sentAt - TUNING.timekeeper.indexLagMs);
      this.arm();
      this.announceBursts();
    } catch (error) {
      logger.warn('reading the delayed tasks failed; the next refresh tries again', {
        error: describeError(error),
      });
    } finally {
      this.refreshing = false;
    }
  }

  /** Announces, once each and TUNING.burst.prewarmLeadMs ahead, the seconds in which a burst falls due. */
  private announceBursts(): void {
    const { onBurstAhead, timers, clock } = this.deps;
    if (!onBurstAhead) return;
    const bySecond = new Map<number, { at: number; count: number }>();
    for (const at of this.due.values()) {
      const second = Math.floor(at / 1000);
      const b = bySecond.get(second) ?? { at, count: 0 };
      bySecond.set(second, { at: Math.min(b.at, at), count: b.count + 1 });
    }
    for (const [second, { at, count }] of bySecond) {
      if (count < TUNING.burst.minTasks || this.announced.has(second)) continue;
      this.announced.add(second);
      timers.timeout(
        () => onBurstAhead(at, count),
        Math.max(0, at - TUNING.burst.prewarmLeadMs - clock.now()),
      );
    }
  }

  /** One timer, for the earliest due time. */
  private arm(): void {
    const next = this.nextDueAt;
    if (next === undefined || this.stopped || next >= this.dueTimerAt) return;
    this.deps.timers.clear(this.dueTimer);
    this.dueTimerAt = next;
    this.dueTimer = this.deps.timers.timeout(
      () => {
        this.dueTimerAt = Number.POSITIVE_INFINITY;
        this.track(this.promoteDue());
      },
      Math.max(0, next - this.deps.clock.now()) + TUNING.timekeeper.pastDueMs,
    );
  }

  /**
   * Everything due now: a burst's tasks are offered to the workers first (promoted after the grace if
   * still waiting), the rest promoted at once (which arms for the next).
   */
  private async promoteDue(): Promise<void> {
    const { clock, offerDue } = this.deps;
    const now = clock.now();
    const dueNow = [...this.due].filter(([, at]) => at <= now);
    for (const [id] of dueNow) this.due.delete(id);
    const burst = offerDue ? dueNow.filter(([, at]) => this.announced.has(Math.floor(at / 1000))) : [];
    if (burst.length > 0) {
      for (const [id, at] of burst) this.deferred.set(id, at);
      offerDue!(burst.map(([id, dueAt]) => ({ id, dueAt })));
      this.deferBurst(burst.map(([id]) => id));
    }
    const inBurst = new Set(burst.map(([id]) => id));
    await this.promote(dueNow.filter(([id]) => !inBurst.has(id)));
  }

  /**
   * Every TUNING.burst.graceMs after a burst's instant: a fresh read tells which of its tasks still wait. While
   * the workers take them (fewer wait than at the last look), they are left to them; once a look finds
   * no progress (the workers are gone, full, or may not take that type), or TUNING.burst.maxDeferMs have
   * passed, what waits is promoted.
   */
  private async promoteLeft(ids: string[]): Promise<void> {
    const { clock, logger, reads } = this.deps;
    let waiting: string[];
    try {
      // Without reads it cannot tell what the workers took: all of it is promoted (a write each, which
      // applies only to what still waits).
      const found = reads
        ? await reads.store.dueDelayed({ before: clock.now(), limit: TUNING.timekeeper.readLimit })
        : ids.map((id) => ({ id }));
      const still = new Set(found.map((d) => d.id));
      waiting = ids.filter((id) => still.has(id));
    } catch (error) {
      logger.warn('reading what a burst left failed; promoting all of it', { error: describeError(error) });
      waiting = ids;
    }
    const dueAt = Math.min(...ids.map((id) => this.deferred.get(id) ?? Number.POSITIVE_INFINITY));
    const left = new Set(waiting);
    for (const id of ids) if (!left.has(id)) this.deferred.delete(id);
    const progress = waiting.length > 0 && waiting.length < ids.length;
    if (progress && clock.now() - dueAt < TUNING.burst.maxDeferMs && !this.stopped) {
      this.deferBurst(waiting);
      return;
    }
    const promoting = waiting.map((id): [string, number] => [id, this.deferred.get(id)!]);
    for (const id of waiting) this.deferred.delete(id);
    await this.promote(promoting);
  }

  /** Leaves these burst tasks to the workers for TUNING.burst.graceMs, then looks again (promoteLeft). */
  private deferBurst(ids: string[]): void {
    const grace = this.deps.timers.timeout(() => {
      this.graceTimers.delete(grace);
      this.track(this.promoteLeft(ids));
    }, TUNING.burst.graceMs);
    this.graceTimers.add(grace);
  }

  /** Whether a read sent at `sentAt` listing this task at this due time predates (or lags) its promotion. */
  private staleEntry(id: string, dueAt: number, sentAt: number): boolean {
    const promoted = this.promotedLately.get(id);
    return (
      promoted !== undefined &&
      promoted.dueAt === dueAt &&
      sentAt < promoted.at + TUNING.timekeeper.indexLagMs
    );
  }

  /** Forgets promotions that applied before `at`. */
  private forgetPromotionsBefore(at: number): void {
    for (const [id, promoted] of this.promotedLately) if (promoted.at < at) this.promotedLately.delete(id);
  }

  /** Promotes these tasks (id -> due time), TUNING.timekeeper.promoteConcurrency at a time. */
  private async promote(ready: [id: string, dueAt: number][]): Promise<void> {
    const { store, logger, clock, events } = this.deps;
    for (const [id] of ready) this.promoting.add(id);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(TUNING.timekeeper.promoteConcurrency, ready.length) }, async () => {
        while (next < ready.length && !this.stopped) {
          const [id, dueAt] = ready[next++]!;
          try {
            // False: cancelled, promoted by someone else, or the store's clock says not yet (this
            // clock stepped back: due again, armed after this batch).
            if (await store.promote({ id })) {
              this.promoted++;
              this.lastPromotedAt = clock.now();
              this.promotedLately.set(id, { dueAt, at: clock.now() });
              events?.emit('task:promoted', { taskId: id });
            } else if (clock.now() < dueAt) {
              this.due.set(id, dueAt);
              continue;
            }
            this.expected.delete(id);
          } catch (error) {
            this.expected.delete(id);
            logger.warn('promoting a due task failed; the next refresh or sweep promotes it', {
              taskId: id,
              error: describeError(error),
            });
          }
        }
      }),
    );
    for (const [id] of ready) this.promoting.delete(id);
    // Stopped before these were sent: still due, so nextDueAt names them and the run hands over.
    for (const [id, dueAt] of ready.slice(next)) this.due.set(id, dueAt);
    this.arm();
  }
}
