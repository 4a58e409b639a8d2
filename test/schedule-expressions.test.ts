import { describe, expect, it } from 'vitest';
import {
  ExpressionError,
  fireTimes,
  latestFireTimes,
  parseExpression,
  rateTicks,
} from '../shared/schedules/schedule-expression.js';

const t = (iso: string) => Date.parse(iso);
const iso = (ms: number[]) => ms.map((m) => new Date(m).toISOString());

describe('schedule expressions (EventBridge Scheduler syntax)', () => {
  it('rate ticks every interval from the schedule’s creation', () => {
    const created = t('2026-11-30T09:00:10Z');
    const e = parseExpression('rate(5 minutes)');
    expect(iso(fireTimes(e, created, created + 16 * 60_000, created))).toEqual([
      '2026-11-30T09:05:10.000Z',
      '2026-11-30T09:10:10.000Z',
      '2026-11-30T09:15:10.000Z',
    ]);
    expect(
      iso(
        fireTimes(
          parseExpression('rate(1 hour)'),
          t('2026-11-30T10:30:00Z'),
          t('2026-11-30T12:10:00Z'),
          created,
        ),
      ),
    ).toEqual(['2026-11-30T11:00:10.000Z', '2026-11-30T12:00:10.000Z']);
    expect(fireTimes(parseExpression('rate(1 day)'), created, created + 86_400_000, created)).toEqual([
      created + 86_400_000,
    ]);
  });

  it('cron with day-of-week and ?: weekdays at 09:00, in UTC by default', () => {
    const e = parseExpression('cron(0 9 ? * MON-FRI *)');
    // 2026-12-04 is a Friday.
    expect(iso(fireTimes(e, t('2026-12-04T00:00:00Z'), t('2026-12-08T23:00:00Z'), 0))).toEqual([
      '2026-12-04T09:00:00.000Z',
      '2026-12-07T09:00:00.000Z',
      '2026-12-08T09:00:00.000Z',
    ]);
  });

  it('cron uses EventBridge’s weekday numbers (1 = Sunday), L and #', () => {
    expect(
      iso(
        fireTimes(
          parseExpression('cron(0 12 ? * 2 *)'),
          t('2026-11-30T13:00:00Z'),
          t('2026-12-08T00:00:00Z'),
          0,
        ),
      ),
    ).toEqual(['2026-12-07T12:00:00.000Z']); // 2 = Monday
    expect(
      iso(
        fireTimes(
          parseExpression('cron(0 0 L * ? *)'),
          t('2026-11-01T00:00:00Z'),
          t('2027-01-01T00:00:00Z'),
          0,
        ),
      ),
    ).toEqual(['2026-11-30T00:00:00.000Z', '2026-12-31T00:00:00.000Z']);
    expect(
      iso(
        fireTimes(
          parseExpression('cron(30 8 ? * 6#3 2027)'),
          t('2026-12-01T00:00:00Z'),
          t('2027-02-01T00:00:00Z'),
          0,
        ),
      ),
    ).toEqual(['2027-01-15T08:30:00.000Z']); // third Friday, only in 2027
  });

  it('follows the time zone across a daylight-saving change', () => {
    const e = parseExpression('cron(0 9 ? * * *)', 'Europe/Berlin');
    // Berlin moves from UTC+1 to UTC+2 on 2027-03-28.
    expect(iso(fireTimes(e, t('2027-03-26T12:00:00Z'), t('2027-03-29T12:00:00Z'), 0))).toEqual([
      '2027-03-27T08:00:00.000Z',
      '2027-03-28T07:00:00.000Z',
      '2027-03-29T07:00:00.000Z',
    ]);
    const ny = parseExpression('cron(30 1 * * ? *)', 'America/New_York');
    // New York falls back on 2026-11-01: 01:30 local happens at 05:30Z (EDT) on 31 Oct, 06:30Z (EST) on 2 Nov.
    expect(iso(fireTimes(ny, t('2026-10-31T00:00:00Z'), t('2026-11-02T12:00:00Z'), 0))[0]).toBe(
      '2026-10-31T05:30:00.000Z',
    );
    expect(iso(fireTimes(ny, t('2026-10-31T00:00:00Z'), t('2026-11-02T12:00:00Z'), 0)).at(-1)).toBe(
      '2026-11-02T06:30:00.000Z',
    );
  });

  it('at() fires once, at the local time in the zone', () => {
    const e = parseExpression('at(2026-12-01T09:00:00)', 'Asia/Tokyo');
    expect(e).toEqual({ kind: 'at', at: t('2026-12-01T00:00:00Z') });
    expect(fireTimes(e, t('2026-11-30T00:00:00Z'), t('2026-12-31T00:00:00Z'), 0)).toEqual([
      t('2026-12-01T00:00:00Z'),
    ]);
    expect(fireTimes(e, t('2026-12-01T00:00:00Z'), t('2026-12-31T00:00:00Z'), 0)).toEqual([]);
  });

  it.each([
    ['every 5 minutes', 'must be rate(...), cron(...) or at(...)'],
    ['rate(5 minute)', 'write rate(5 minutes)'],
    ['rate(1 minutes)', 'write rate(1 minute)'],
    ['rate(0 minutes)', 'at least 1'],
    ['rate(10 seconds)', 'a whole number and a unit'],
    ['cron(0 9 * * *)', 'takes 6 fields'],
    ['cron(0 9 * * MON *)', 'exactly one of day-of-month and day-of-week must be "?"'],
    ['cron(0 9 ? * ? *)', 'exactly one of day-of-month and day-of-week must be "?"'],
    ['cron(61 9 ? * MON *)', 'minute'],
    ['at(2026-12-01 09:00)', 'local date-time without a zone'],
    ['at(2026-02-30T09:00:00)', 'at('],
  ])('refuses %s: %s', (expression, message) => {
    expect(() => parseExpression(expression)).toThrow(ExpressionError);
    expect(() => parseExpression(expression)).toThrow(message);
  });

  it('refuses an unknown time zone', () => {
    expect(() => parseExpression('rate(1 day)', 'Mars/Olympus')).toThrow(
      '"Mars/Olympus" is not an IANA time zone',
    );
  });
});

describe('the recent end of a long span, and EventBridge cron forms', () => {
  it('latestFireTimes gives the newest ticks however long the span (cron from Croner’s previousRuns, rate by arithmetic)', () => {
    const cron = parseExpression('cron(0 9 ? * MON-FRI *)', 'Europe/Berlin');
    const forward = fireTimes(cron, t('2026-01-01T00:00:00Z'), t('2027-06-01T00:00:00Z'), 0, 10_000);
    expect(latestFireTimes(cron, t('2026-01-01T00:00:00Z'), t('2027-06-01T00:00:00Z'), 0, 5)).toEqual(
      forward.slice(-5),
    );
    // A tick exactly at the end of the span is in it.
    expect(latestFireTimes(cron, 0, forward.at(-1)!, 0, 1)).toEqual([forward.at(-1)]);
    const created = t('2026-11-30T09:00:10Z');
    const rate = parseExpression('rate(1 minute)');
    expect(iso(latestFireTimes(rate, 0, created + 2000 * 60_000 + 5, created, 2))).toEqual([
      '2026-12-01T18:19:10.000Z',
      '2026-12-01T18:20:10.000Z',
    ]);
    expect(latestFireTimes(rate, 0, created + 60_000, created, 10)).toEqual([created + 60_000]);
  });

  it('rateTicks places ticks on any phase, before and after it', () => {
    expect(rateTicks(60_000, 1_000_000, 1_000_000 - 150_000, 1_000_000 + 60_000, 10)).toEqual([
      880_000, 940_000, 1_000_000, 1_060_000,
    ]);
    expect(rateTicks(60_000, 1_000_000, 0, 1_000_000, 2)).toEqual([940_000, 1_000_000]);
    expect(rateTicks(60_000, 1_000_000, 0, 1_000_000, 2, true)).toEqual([40_000, 100_000]);
  });

  it('takes EventBridge’s n/step form in cron fields: 0/15 is every 15 minutes from 0', () => {
    const e = parseExpression('cron(0/15 * * * ? *)');
    expect(iso(fireTimes(e, t('2026-12-01T09:00:00Z'), t('2026-12-01T10:00:00Z'), 0))).toEqual([
      '2026-12-01T09:15:00.000Z',
      '2026-12-01T09:30:00.000Z',
      '2026-12-01T09:45:00.000Z',
      '2026-12-01T10:00:00.000Z',
    ]);
  });
});
