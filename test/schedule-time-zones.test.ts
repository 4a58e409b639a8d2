import { describe, expect, it } from 'vitest';
import { canonicalTimeZone, TimeZoneError } from '../shared/schedules/time-zones.js';
import { CANONICAL_TIME_ZONES } from '../shared/schedules/time-zone-names.js';

describe('schedule time zones: what is stored and sent to EventBridge Scheduler is a canonical tz name', () => {
  it.each([
    ['Europe/Berlin', 'Europe/Berlin'],
    ['europe/berlin', 'Europe/Berlin'],
    ['AMERICA/NEW_YORK', 'America/New_York'],
    ['utc', 'UTC'],
    ['Etc/UTC', 'UTC'],
    ['GMT', 'UTC'],
    ['Zulu', 'UTC'],
    ['US/Pacific', 'America/Los_Angeles'],
    ['us/eastern', 'America/New_York'],
    ['Canada/Eastern', 'America/Toronto'],
    ['EST5EDT', 'America/New_York'],
    ['GB', 'Europe/London'],
    // ICU calls these by their old names; the canonical ones come back, both ways in.
    ['Asia/Kolkata', 'Asia/Kolkata'],
    ['Asia/Calcutta', 'Asia/Kolkata'],
    ['Europe/Kiev', 'Europe/Kyiv'],
    ['Asia/Saigon', 'Asia/Ho_Chi_Minh'],
    ['America/Buenos_Aires', 'America/Argentina/Buenos_Aires'],
    ['Etc/GMT+5', 'Etc/GMT+5'],
    [' Europe/Paris ', 'Europe/Paris'],
  ])('%s -> %s', (given, canonical) => {
    expect(canonicalTimeZone(given)).toBe(canonical);
  });

  it.each([
    ['EST', 'America/New_York'],
    ['mst', 'America/Denver'],
    ['HST', 'Pacific/Honolulu'],
  ])('refuses the fixed-offset abbreviation %s, naming the zone to use', (given, hint) => {
    expect(() => canonicalTimeZone(given)).toThrow(TimeZoneError);
    expect(() => canonicalTimeZone(given)).toThrow(hint);
  });

  it.each(['PST', 'IST', 'BST', 'AST'])(
    'refuses %s, an abbreviation ICU knows but the tz database does not (BST is Asia/Dhaka there)',
    (given) => {
      expect(() => canonicalTimeZone(given)).toThrow('is an abbreviation, not a place');
    },
  );

  it.each(['+01:00', '-0500', '+1'])(
    'refuses the UTC offset %j, naming the Etc zone to use (Node 22 Intl takes offsets)',
    (given) => {
      expect(() => canonicalTimeZone(given)).toThrow(/is a UTC offset, not an IANA time zone: .*Etc\/GMT-1/);
    },
  );

  it.each([
    ['EST5EDT', 'America/New_York'],
    ['CST6CDT', 'America/Chicago'],
    ['mst7mdt', 'America/Denver'],
    ['PST8PDT', 'America/Los_Angeles'],
  ])('%s -> %s on every Node (ICU follows the 2024b link on Node 20, not on Node 22)', (given, canonical) => {
    expect(canonicalTimeZone(given)).toBe(canonical);
  });

  it.each(['Mars/Olympus', 'PDT', 'UTC+1', 'Etc/GMT+13', 'SystemV/EST5', ''])(
    'refuses %j as no IANA time zone',
    (given) => {
      expect(() => canonicalTimeZone(given)).toThrow('is not an IANA time zone');
    },
  );

  it('every canonical name is known to Intl and maps to itself, and fits Scheduler’s 50-character limit', () => {
    for (const zone of CANONICAL_TIME_ZONES) {
      expect(canonicalTimeZone(zone)).toBe(zone);
      expect(zone.length).toBeLessThanOrEqual(50);
    }
  });
});
