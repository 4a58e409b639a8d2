/**
 * Time zones as EventBridge Scheduler is given them (ScheduleExpressionTimezone), and wall-clock
 * arithmetic in a zone. Pure: no clock.
 *
 * Which names Scheduler accepts is not spelled out in its docs ("The timezone in which the scheduling
 * expression is evaluated", API_CreateSchedule; examples use names such as America/New_York,
 * Europe/Helsinki, Asia/Kolkata). This reference is deliberately strict: it accepts exactly the
 * zone names of the tz database's zone.tab (the list the app stores and sends, time-zone-names.ts),
 * case as written there, plus UTC and the Etc/GMT offsets; aliases and legacy names (US/Pacific, EST)
 * are refused.
 *
 * Why strict: JavaScript's Intl accepts any case ('europe/berlin', 'utc') and aliases ('US/Pacific',
 * 'EST'), and even canonicalises to ICU's legacy IDs ('Asia/Kolkata' -> 'Asia/Calcutta'), so a name
 * Intl likes is no evidence the service likes it. An app that sends only canonical names is safe
 * whatever Scheduler does with aliases.
 */

import { CANONICAL_TIME_ZONES } from '../../../shared/schedules/time-zone-names.js';

// The names themselves are the tz database's (the app's list): data, not a rule, so one copy serves both.
// Plus Etc/UTC: CDK writes it for every schedule that names no zone, and Scheduler takes it.
const CANONICAL = new Set<string>([...CANONICAL_TIME_ZONES, 'Etc/UTC']);
const LOWERCASE = new Map([...CANONICAL].map((name) => [name.toLowerCase(), name]));

export type TimeZoneVerdict = { ok: true } | { ok: false; reason: string };

/** Whether Scheduler (as this reference models it) accepts this ScheduleExpressionTimezone. */
export function checkTimeZone(name: string): TimeZoneVerdict {
  if (CANONICAL.has(name)) return { ok: true };
  const sameLetters = LOWERCASE.get(name.toLowerCase());
  if (sameLetters) return { ok: false, reason: `time zone names are case-sensitive: write ${sameLetters}` };
  const resolved = intlResolve(name);
  if (resolved) {
    const canonical = CANONICAL.has(resolved) ? resolved : undefined;
    return {
      ok: false,
      reason: `"${name}" is a legacy alias, not a canonical IANA zone name${canonical ? `; write ${canonical}` : ''}`,
    };
  }
  return {
    ok: false,
    reason: `"${name}" is not an IANA time zone name (e.g. UTC, Europe/Berlin, America/New_York)`,
  };
}

function intlResolve(name: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** A wall-clock reading (month 1-12). */
export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall clock in `zone` at instant `t` (ms), to the second. */
export function wallClockAt(t: number, zone: string): WallClock {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  const parts: Record<string, number> = {};
  for (const p of f.formatToParts(new Date(t))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour!,
    minute: parts.minute!,
    second: parts.second!,
  };
}

function wallAsUtc(w: WallClock): number {
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
}

function sameWall(a: WallClock, b: WallClock): boolean {
  return wallAsUtc(a) === wallAsUtc(b);
}

/**
 * The first instant whose wall clock in `zone` reads `w`, or undefined when the clocks skip it
 * (a daylight-saving gap). A reading that happens twice (the autumn overlap) gives the first.
 */
export function instantOfWallClock(w: WallClock, zone: string): number | undefined {
  const naive = wallAsUtc(w);
  const offsets = new Set(
    [-86_400_000, 0, 86_400_000].map(
      (d) => wallAsUtc(wallClockAt(naive + d, zone)) - (naive + d - ((naive + d) % 1000)),
    ),
  );
  const hits = [...offsets].map((off) => naive - off).filter((t) => sameWall(wallClockAt(t, zone), w));
  return hits.length ? Math.min(...hits) : undefined;
}

/** Whether the wall-clock reading at `t` already happened earlier (the second pass of an autumn overlap). */
export function isRepeatedWallClock(t: number, zone: string): boolean {
  const w = wallClockAt(t, zone);
  return [30, 60, 120].some((minutes) => sameWall(wallClockAt(t - minutes * 60_000, zone), w));
}
