import { TUNING } from '../tuning.js';
/**
 * When a worker looks for work next, and whether it stays up without any: pure, tested with a fixed
 * clock. A run started ahead of a burst (the timekeeper announced many tasks falling due at one
 * instant) waits for the instant, then looks often while the promotions land.
 */

/** Whether a run started for a burst at `at` should still stay up. */
export function expectingWork(at: number | undefined, now: number): boolean {
  return at !== undefined && now < at + TUNING.poll.expectedWorkWindowMs;
}

/** How long to wait for the next look: until the burst's instant, often within its window, else the poll. */
export function pollWait(pollMs: number, at: number | undefined, now: number): number {
  if (at === undefined || now >= at + TUNING.poll.expectedWorkWindowMs) return pollMs;
  return now < at ? Math.min(pollMs, at - now + 5) : Math.min(pollMs, TUNING.poll.expectedWorkPollMs);
}

/**
 * An idle worker's polls back off: each empty round doubles the wait from the poll interval, up to
 * eight intervals and at most a second (never below the interval itself), or up to `ceilingMs` where
 * every writer wakes the worker (the local stack: events in its process, the wake channel across). A short interval then costs
 * a round every few hundred milliseconds, not every few dozen: locally every enqueue wakes the worker
 * at once anyway (in this process by event, in others by the wake channel), and a full round of
 * partition reads at 50 ms kept the process too busy to start what it was told of (p50 46 ms against
 * 15 ms at 1 s). A longer wait (a burst's window, a retry due) is kept as it is.
 */
export function idlePollWait(
  waitMs: number,
  pollMs: number,
  emptyRounds: number,
  ceilingMs = Math.min(8 * pollMs, TUNING.poll.idleCeilingMs),
): number {
  if (emptyRounds <= 1 || waitMs < pollMs) return waitMs;
  return Math.min(Math.max(pollMs, ceilingMs), pollMs * 2 ** Math.min(emptyRounds - 1, 10));
}
