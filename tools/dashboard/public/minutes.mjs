// The last hour of outcomes, kept across refreshes: the first GET /stats reads the whole hour, each
// later one re-reads only the last few minutes before the previous answer (REREAD_MINUTES), so a refresh
// reads a handful of minutes of counts, not sixty.

export const WINDOW_MINUTES = 60;
const MINUTE_MS = 60_000;
export const OUTCOMES = ['succeeded', 'failed', 'retried', 'cancelled'];

/**
 * How many minutes before the previous answer's minute each refresh reads again. A minute's counts reach the
 * table after it ends: a worker flushes every minute or so, and a write that fails waits for the next
 * flush, so a minute can still grow two or three minutes later. Five leaves room for a second failed
 * write and for clocks a little apart; the answer's minutes replace the held ones, so nothing counts twice.
 */
export const REREAD_MINUTES = 5;

export const minuteOf = (iso) => Math.floor(Date.parse(iso) / MINUTE_MS) * MINUTE_MS;

/**
 * What to ask for next: from REREAD_MINUTES before the minute the last answer was in; before any answer,
 * nothing (undefined: the API's default is the whole hour by its own clock, where one computed from the
 * browser's would lose minutes when the browser's clock is ahead).
 */
export function sinceFor(held) {
  if (!held) return undefined;
  return new Date(minuteOf(held.at) - REREAD_MINUTES * MINUTE_MS).toISOString();
}

/**
 * The hour after an answer: the minutes held before `since`, then the answer's (which replace any held
 * from `since` on: each is the minute's whole count so far, not what was added since), without those
 * older than the hour before the answer's `at`. Oldest first. No `since`: the answer is the whole hour.
 */
export function mergeMinutes(held, since, answer) {
  const oldest = minuteOf(answer.at) - (WINDOW_MINUTES - 1) * MINUTE_MS;
  const sinceMs = since === undefined ? -Infinity : Date.parse(since);
  const kept = (held?.minutes ?? []).filter((m) => Date.parse(m.at) < sinceMs);
  const minutes = [...kept, ...answer.minutes]
    .filter((m) => Date.parse(m.at) >= oldest)
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  return { at: answer.at, minutes };
}

/** One bar per minute of the hour ending with `at`'s minute, empty minutes included, oldest first. */
export function minuteBars(hour) {
  const last = minuteOf(hour.at);
  const byMinute = new Map(hour.minutes.map((m) => [minuteOf(m.at), m]));
  const bars = [];
  for (let i = WINDOW_MINUTES - 1; i >= 0; i--) {
    const at = last - i * MINUTE_MS;
    const totals = { succeeded: 0, failed: 0, retried: 0, cancelled: 0 };
    for (const counts of Object.values(byMinute.get(at)?.types ?? {}))
      for (const k of OUTCOMES) totals[k] += counts[k] ?? 0;
    bars.push({ at: new Date(at).toISOString(), ...totals });
  }
  return bars;
}

/** The hour's outcomes per task type. */
export function outcomesByType(hour) {
  const byType = {};
  for (const minute of hour.minutes)
    for (const [type, counts] of Object.entries(minute.types)) {
      byType[type] ??= { succeeded: 0, failed: 0, retried: 0, cancelled: 0 };
      for (const k of OUTCOMES) byType[type][k] += counts[k] ?? 0;
    }
  return byType;
}
