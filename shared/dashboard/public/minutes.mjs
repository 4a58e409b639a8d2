// The last hour of outcomes, kept across refreshes: the first GET /stats reads the whole hour, each
// later one only `since` the minute of the previous answer (that minute was still filling), so a
// refresh reads a minute or two of counts, not sixty.

export const WINDOW_MINUTES = 60;
const MINUTE_MS = 60_000;
export const OUTCOMES = ['succeeded', 'failed', 'retried', 'cancelled'];

export const minuteOf = (iso) => Math.floor(Date.parse(iso) / MINUTE_MS) * MINUTE_MS;

/** What to ask for next: the minute the last answer was in, or the whole hour before any answer. */
export function sinceFor(held, now = Date.now()) {
  const from = held
    ? minuteOf(held.at)
    : minuteOf(new Date(now).toISOString()) - (WINDOW_MINUTES - 1) * MINUTE_MS;
  return new Date(from).toISOString();
}

/**
 * The hour after an answer: the minutes held before `since`, then the answer's (which replace any held
 * from `since` on), without those older than the hour before the answer's `at`. Oldest first.
 */
export function mergeMinutes(held, since, answer) {
  const sinceMs = Date.parse(since);
  const oldest = minuteOf(answer.at) - (WINDOW_MINUTES - 1) * MINUTE_MS;
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
