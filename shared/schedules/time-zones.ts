/**
 * The time zone of a schedule, as stored and as sent to EventBridge Scheduler: always a canonical IANA
 * name from time-zone-names.ts. Node's Intl is looser than Scheduler: it takes any letter case
 * ('europe/berlin') and the tz database's old aliases ('US/Pacific', 'Asia/Calcutta', 'Etc/UTC'),
 * while Scheduler's documentation shows only canonical region names and says nothing of other
 * spellings. So a caller's name is mapped onto the canonical one it means, or refused with what to
 * write instead; a name Scheduler still refuses comes back as a 400 with its message.
 */
import { LeaseholdError } from '../errors.js';
import { CANONICAL_TIME_ZONES } from './time-zone-names.js';

/** A time zone name that is not (or not unambiguously) an IANA zone; the message says what to write instead. */
export class TimeZoneError extends LeaseholdError {
  override name = 'TimeZoneError';
  override readonly code = 'SCHEDULE_TIME_ZONE_INVALID';
  override readonly status = 400;
}

const byLowerCase = new Map(CANONICAL_TIME_ZONES.map((zone) => [zone.toLowerCase(), zone]));

/**
 * The tz database's names without a slash, the only ones taken besides Area/Place names. ICU also
 * knows Java's three-letter ids ('PST', 'IST', 'BST' = Asia/Dhaka, 'AST' = America/Anchorage), which
 * are not tz names and often not what the caller means: those are refused.
 */
const TZDB_NAMES_WITHOUT_AREA = new Set(
  (
    'CET CST6CDT Cuba EET EST5EDT Egypt Eire GB GB-Eire GMT GMT+0 GMT-0 GMT0 Greenwich Hongkong Iceland Iran Israel Jamaica ' +
    'Japan Kwajalein Libya MET MST7MDT NZ NZ-CHAT Navajo PRC PST8PDT Poland Portugal ROC ROK Singapore Turkey UCT UTC Universal W-SU WET Zulu'
  )
    .toLowerCase()
    .split(' '),
);

/**
 * The tz database's fixed-offset abbreviations. Callers who write 'EST' usually mean US Eastern time
 * with its summer time, which 'EST' is not (tzdb links it to America/Panama): make them say which.
 */
const AMBIGUOUS_ABBREVIATIONS: Record<string, string> = {
  est: 'America/New_York for US Eastern time with daylight saving, or Etc/GMT+5 for UTC-05:00 all year',
  mst: 'America/Denver for US Mountain time with daylight saving, America/Phoenix or Etc/GMT+7 for UTC-07:00 all year',
  hst: 'Pacific/Honolulu (UTC-10:00 all year)',
};

/**
 * Names whose meaning Node's ICU versions answer differently: tzdata 2024b made the POSIX-style
 * US zones links to a city, which Node 20's ICU follows and Node 22's (Lambda's runtime) names by
 * themselves, so without this table the same name was taken on one and refused on the other.
 */
const LINKED_NAMES: Record<string, string> = {
  est5edt: 'America/New_York',
  cst6cdt: 'America/Chicago',
  mst7mdt: 'America/Denver',
  pst8pdt: 'America/Los_Angeles',
};

/** A UTC offset ('+01:00', '-0500'): Node 22's Intl takes these (ECMA-402 offset zones); Scheduler wants a name. */
const UTC_OFFSET = /^[+-]\d/;

/** Intl's own name for a zone (ICU's canonical, which for some zones is an old alias), or undefined if it knows none. */
function intlName(zone: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** ICU names some zones by their old alias (Asia/Kolkata is 'Asia/Calcutta'): map those back, once. */
let intlToCanonical: Map<string, string> | undefined;
function canonicalOfIntlName(name: string): string | undefined {
  intlToCanonical ??= new Map(CANONICAL_TIME_ZONES.map((zone) => [intlName(zone) ?? zone, zone]));
  return byLowerCase.get(name.toLowerCase()) ?? intlToCanonical.get(name);
}

/**
 * The canonical IANA name for `zone`: 'europe/berlin' -> 'Europe/Berlin', 'utc' -> 'UTC',
 * 'US/Pacific' -> 'America/Los_Angeles'. Throws TimeZoneError saying what to write instead.
 */
export function canonicalTimeZone(zone: string): string {
  const trimmed = zone.trim();
  const exact = byLowerCase.get(trimmed.toLowerCase()) ?? LINKED_NAMES[trimmed.toLowerCase()];
  if (exact) return exact;
  if (UTC_OFFSET.test(trimmed))
    throw new TimeZoneError(
      `"${zone}" is a UTC offset, not an IANA time zone: give a place (e.g. Europe/Berlin), or Etc/GMT-1 for UTC+01:00 all year (the sign is reversed in Etc names)`,
    );
  const ambiguous = AMBIGUOUS_ABBREVIATIONS[trimmed.toLowerCase()];
  if (ambiguous)
    throw new TimeZoneError(
      `"${zone}" is an abbreviation, not a place; give an IANA zone name: ${ambiguous}`,
    );
  if (
    !trimmed.includes('/') &&
    !TZDB_NAMES_WITHOUT_AREA.has(trimmed.toLowerCase()) &&
    intlName(trimmed) !== undefined
  ) {
    throw new TimeZoneError(
      `"${zone}" is an abbreviation, not a place; give an IANA zone name (e.g. America/Los_Angeles, Europe/London, Asia/Kolkata)`,
    );
  }
  const known = intlName(trimmed);
  const canonical = known === undefined ? undefined : canonicalOfIntlName(known);
  if (canonical) return canonical;
  throw new TimeZoneError(`"${zone}" is not an IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)`);
}
