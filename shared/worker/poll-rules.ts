/**
 * When a worker looks for work next, and whether it stays up without any: pure, tested with a fixed
 * clock. A run started ahead of a burst (the timekeeper announced many tasks falling due at one
 * instant) waits for the instant, then looks often while the promotions land.
 */
/** After an expected burst's instant, how long a run keeps looking often (the promotions take a moment). */
export const EXPECTED_WORK_WINDOW_MS = 3_000;
/** How often it looks within that window. */
export const EXPECTED_WORK_POLL_MS = 50;

/** Whether a run started for a burst at `at` should still stay up. */
export function expectingWork(at: number | undefined, now: number): boolean {
  return at !== undefined && now < at + EXPECTED_WORK_WINDOW_MS;
}

/** How long to wait for the next look: until the burst's instant, often within its window, else the poll. */
export function pollWait(pollMs: number, at: number | undefined, now: number): number {
  if (at === undefined || now >= at + EXPECTED_WORK_WINDOW_MS) return pollMs;
  return now < at ? Math.min(pollMs, at - now + 5) : Math.min(pollMs, EXPECTED_WORK_POLL_MS);
}
