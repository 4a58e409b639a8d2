/**
 * Whether the worker's scheduled tick has anything to do, from the queue summary (store/queue-summary.ts).
 * Pure, with the clock's `now` passed in. The tick is the floor that guarantees progress: it runs
 * whenever the summary shows work or cannot be trusted, and returns at once only when the summary is
 * fresh and shows none.
 */
import type { QueueSummary } from '../store/queue-summary.js';
import { TUNING } from '../tuning.js';

export type IdleTickPlan =
  | { run: true; because: 'no-summary' | 'stale-summary' | 'ready-work' | 'due-soon' }
  | { run: false; because: 'nothing-to-do' };

export interface IdleTickRules {
  /** How often recovery writes the summary; one older than a few of these means recovery is not running. */
  recoveryIntervalMs: number;
  /** How often the tick comes: a delayed task due before the next tick needs this one to keep time. */
  tickIntervalMs: number;
}

/** Summaries older than this many recovery intervals are not trusted (a sweep or two may fail). */
const STALE_AFTER_INTERVALS = 3;

/** Whether the summary shows ready work its kicks did not take (see TUNING.kick.workGraceMs). */
function readyWorkWaiting(summary: QueueSummary): boolean {
  if (summary.readyTypes.length === 0) return false;
  const byType = new Map((summary.types ?? []).map((t) => [t.type, t]));
  return summary.readyTypes.some((type) => {
    const oldest = byType.get(type)?.oldestDueAt;
    // Without the oldest's due time (a summary written before it was kept) the work counts as waiting.
    return oldest === undefined || oldest <= summary.writtenAt - TUNING.kick.workGraceMs;
  });
}

export function planIdleTick(
  summary: QueueSummary | undefined,
  now: number,
  rules: IdleTickRules,
): IdleTickPlan {
  if (!summary) return { run: true, because: 'no-summary' };
  if (summary.writtenAt < now - STALE_AFTER_INTERVALS * rules.recoveryIntervalMs)
    return { run: true, because: 'stale-summary' };
  if (readyWorkWaiting(summary)) return { run: true, because: 'ready-work' };
  // Due before the next tick (or already): this invocation keeps time for it.
  if (summary.nextDueAt !== undefined && summary.nextDueAt <= now + rules.tickIntervalMs)
    return { run: true, because: 'due-soon' };
  return { run: false, because: 'nothing-to-do' };
}
