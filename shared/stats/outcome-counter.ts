/**
 * Outcome counts in memory, per owner, minute and task type, until a flush writes them (one write per
 * owner and minute: outcome-recorder.ts). Counting is per task, writing per interval: a task's own
 * writes stay what they are (DESIGN: at most 8.5 write units per short task). Pure: the minute comes
 * from the injected clock, and nothing here does I/O.
 */
import type { Clock } from '../clock.js';
import type { FinishedStatus, LeaseEventMap, LeaseEvents } from '../events.js';

export const OUTCOMES = ['succeeded', 'failed', 'retried', 'cancelled'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export type OutcomeCounts = Record<Outcome, number>;

export const MINUTE_MS = 60_000;
/** The start of the minute `ms` falls in (epoch ms). */
export const minuteOf = (ms: number) => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

/** How a finished attempt counts; a lease given back unspent (RELEASED) ended nothing. */
const OUTCOME_OF: Record<FinishedStatus, Outcome | undefined> = {
  SUCCESS: 'succeeded',
  FAILED: 'failed',
  RETRYING: 'retried',
  CANCELLED: 'cancelled',
  RELEASED: undefined,
  WAITING_CHILDREN: undefined,
};

export const emptyCounts = (): OutcomeCounts => ({ succeeded: 0, failed: 0, retried: 0, cancelled: 0 });

/** What one owner's tasks ended as in one minute, per type: one flush write. */
export interface MinuteCounts {
  owner: string;
  /** The minute's start (epoch ms). */
  minute: number;
  types: Record<string, OutcomeCounts>;
}

export class OutcomeCounter {
  private pending = new Map<string, MinuteCounts>();

  constructor(private readonly clock: Clock) {}

  /** Owner-minutes waiting for a flush. */
  get size(): number {
    return this.pending.size;
  }

  /** Counts one outcome of `owner`'s task of `type` in the clock's current minute. */
  record(owner: string, type: string, outcome: Outcome, n = 1): void {
    const counts = this.countsOf(owner, minuteOf(this.clock.now()), type);
    counts[outcome] += n;
  }

  /**
   * Counts what `task:finished` says. Every writer emits it once, after its write applied (the worker,
   * recovery, a cancel request), so each outcome is counted by exactly one process. An event without
   * an owner cannot be put anywhere a caller reads, and is not counted.
   */
  listen(events: LeaseEvents): () => void {
    return events.on('task:finished', (event: LeaseEventMap['task:finished']) => {
      const outcome = OUTCOME_OF[event.status];
      if (outcome !== undefined && event.owner !== undefined) this.record(event.owner, event.type, outcome);
    });
  }

  /**
   * Takes every count out for a flush, oldest minute first. Minutes that started before `oldest` are
   * not worth writing (their items would already have expired): they are left out and counted in
   * `dropped`, for the caller to report.
   */
  drain(oldest: number): { batches: MinuteCounts[]; dropped: number } {
    const all = [...this.pending.values()].sort((a, b) => a.minute - b.minute);
    this.pending = new Map();
    const batches = all.filter((b) => b.minute >= oldest);
    const dropped = all.filter((b) => b.minute < oldest).reduce((sum, b) => sum + total(b), 0);
    return { batches, dropped };
  }

  /** Puts back counts a flush could not write, adding them to what was counted meanwhile. */
  restore(batch: MinuteCounts): void {
    for (const [type, counts] of Object.entries(batch.types)) {
      const into = this.countsOf(batch.owner, batch.minute, type);
      for (const outcome of OUTCOMES) into[outcome] += counts[outcome];
    }
  }

  private countsOf(owner: string, minute: number, type: string): OutcomeCounts {
    // JSON of the pair: no owner string can make two pairs one key.
    const key = JSON.stringify([owner, minute]);
    let batch = this.pending.get(key);
    if (!batch) this.pending.set(key, (batch = { owner, minute, types: {} }));
    // Own members only: a type may be named `constructor`.
    if (!Object.hasOwn(batch.types, type)) batch.types[type] = emptyCounts();
    return batch.types[type]!;
  }
}

/** Every count of a batch, all types and outcomes together. */
export function total(batch: Pick<MinuteCounts, 'types'>): number {
  return Object.values(batch.types).reduce(
    (sum, counts) => sum + OUTCOMES.reduce((s, o) => s + counts[o], 0),
    0,
  );
}
