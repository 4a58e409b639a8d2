/** The rate-limit invariant as the history shows it: the most starts any window of `intervalMs` holds (windows start at each start). */
export function mostStartsInWindow(startedAts: number[], intervalMs: number): number {
  const sorted = [...startedAts].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - intervalMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}
