import { describe, expect, it } from 'vitest';
import {
  isoSeconds,
  nextTick,
  validateScheduleRequest,
  type ValidSchedule,
} from '../tools/sim/scheduler/schedule-rules.js';

const NOW = Date.parse('2026-12-01T08:59:43.512Z');
const now = () => NOW;

const request = (over: Record<string, unknown> = {}, target: Record<string, unknown> = {}) => ({
  Name: 'nightly-report',
  ScheduleExpression: 'cron(0 9 ? * MON-FRI *)',
  FlexibleTimeWindow: { Mode: 'OFF' },
  ...over,
  Target: {
    Arn: 'arn:aws:lambda:us-east-1:123456789012:function:fire',
    RoleArn: 'arn:aws:iam::123456789012:role/scheduler',
    Input: '{"t":"<aws.scheduler.scheduled-time>"}',
    ...target,
  },
});

function problems(input: unknown): string {
  const v = validateScheduleRequest(input, now);
  if (v.ok) throw new Error('expected the request to be refused');
  return v.message;
}

function valid(input: unknown): ValidSchedule {
  const v = validateScheduleRequest(input, now);
  if (!v.ok) throw new Error(v.message);
  return v.schedule;
}

/** The first `n` ticks from `from`. */
function ticks(s: ValidSchedule, anchor: number, from: number, n: number): string[] {
  const out: string[] = [];
  for (
    let t = nextTick(s, anchor, from);
    t !== undefined && out.length < n;
    t = nextTick(s, anchor, t + 1000)
  )
    out.push(new Date(t).toISOString());
  return out;
}

describe('request validation', () => {
  it('accepts a valid request and fills in Scheduler defaults', () => {
    const s = valid(request());
    expect(s.request).toMatchObject({
      GroupName: 'default',
      State: 'ENABLED',
      ActionAfterCompletion: 'NONE',
      ScheduleExpressionTimezone: 'UTC',
    });
    expect(s.request.Target.RetryPolicy).toEqual({
      MaximumEventAgeInSeconds: 86400,
      MaximumRetryAttempts: 185,
    });
  });

  it.each(['europe/berlin', 'utc', 'EST', 'US/Pacific', 'Mars/Olympus'])(
    'refuses the time zone %s that Intl may accept',
    (zone) => {
      expect(problems(request({ ScheduleExpressionTimezone: zone }))).toContain(
        `Invalid ScheduleExpressionTimezone ${zone}`,
      );
    },
  );

  it.each(['Etc/UTC', 'UTC', 'Europe/Oslo', 'America/New_York', 'Asia/Kolkata'])(
    'accepts the time zone %s (Etc/UTC is what CDK writes by default)',
    (zone) => {
      expect(valid(request({ ScheduleExpressionTimezone: zone })).request.ScheduleExpressionTimezone).toBe(
        zone,
      );
    },
  );

  it('says which canonical name to write', () => {
    expect(problems(request({ ScheduleExpressionTimezone: 'europe/berlin' }))).toContain(
      'write Europe/Berlin',
    );
  });

  it.each([
    ['0 9 * * 1-5', 'six fields'], // Unix 5-field form, which Croner takes
    ['0 0 9 ? * MON-FRI *', 'six fields'], // Quartz with seconds
    ['0 9 * * MON-FRI *', 'one of day-of-month and day-of-week must be ?'], // both day fields: Croner ORs them
    ['0 9 ? * 0 *', 'outside 1-7'], // Sunday as 0
    ['0 9 ? * ? *', 'cannot both be ?'],
    ['0 9 1 * ? 2200', 'outside 1970-2199'],
    ['60 9 1 * ? *', 'outside 0-59'],
  ])('refuses cron(%s)', (fields, why) => {
    expect(problems(request({ ScheduleExpression: `cron(${fields})` }))).toContain(why);
  });

  it.each([
    '@daily',
    'rate(0 minutes)',
    'rate(1 minutes)',
    'rate(5 minute)',
    'rate(1 second)',
    'at(2026-12-01 10:00:00)',
    'at(2026-02-30T10:00:00)',
  ])('refuses %s', (expression) => {
    expect(problems(request({ ScheduleExpression: expression }))).toContain(
      `Invalid Schedule Expression ${expression}`,
    );
  });

  it('refuses an at() time in the past, in the schedule zone', () => {
    expect(problems(request({ ScheduleExpression: 'at(2026-12-01T08:59:00)' }))).toContain('is in the past');
    // 09:30 in Berlin is 08:30 UTC: past, although 09:30 UTC is not.
    expect(
      problems(
        request({
          ScheduleExpression: 'at(2026-12-01T09:30:00)',
          ScheduleExpressionTimezone: 'Europe/Berlin',
        }),
      ),
    ).toContain('2026-12-01T08:30:00Z is in the past');
    expect(valid(request({ ScheduleExpression: 'at(2026-12-01T09:30:00)' })).expression).toEqual({
      kind: 'at',
      at: Date.parse('2026-12-01T09:30:00Z'),
    });
  });

  it('refuses an Input over 256 KB and non-JSON Input for a Lambda target', () => {
    expect(problems(request({}, { Input: JSON.stringify({ big: 'x'.repeat(256 * 1024) }) }))).toMatch(
      /Target Input is \d+ bytes; the maximum is 262144/,
    );
    expect(problems(request({}, { Input: 'hello' }))).toContain('well-formed JSON');
  });

  it('lists every model constraint a request breaks, worded like Scheduler', () => {
    const message = problems({
      ...request(
        { Name: 'bad name!', Description: 'd'.repeat(513) },
        { RoleArn: 'role', RetryPolicy: { MaximumRetryAttempts: 186, MaximumEventAgeInSeconds: 30 } },
      ),
      FlexibleTimeWindow: undefined,
    });
    expect(message).toMatch(/^6 validation errors detected: /);
    expect(message).toContain(
      "Value 'bad name!' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[0-9a-zA-Z-_.]+$",
    );
    expect(message).toContain(
      "at 'description' failed to satisfy constraint: Member must have length less than or equal to 512",
    );
    expect(message).toContain(
      "Value null at 'flexibleTimeWindow' failed to satisfy constraint: Member must not be null",
    );
    expect(message).toContain(
      "at 'target.roleArn' failed to satisfy constraint: Member must satisfy regular expression pattern",
    );
    expect(message).toContain(
      "Value '186' at 'target.retryPolicy.maximumRetryAttempts' failed to satisfy constraint: Member must have value less than or equal to 185",
    );
    expect(message).toContain(
      "Value '30' at 'target.retryPolicy.maximumEventAgeInSeconds' failed to satisfy constraint: Member must have value greater than or equal to 60",
    );
  });

  it('refuses a 65-character name, a StartDate over 5 minutes ago, and FLEXIBLE without a window', () => {
    expect(problems(request({ Name: 'n'.repeat(65) }))).toContain(
      'Member must have length less than or equal to 64',
    );
    expect(problems(request({ StartDate: (NOW - 6 * 60_000) / 1000 }))).toContain(
      'The StartDate you specify cannot be earlier than 5 minutes ago.',
    );
    expect(problems(request({ FlexibleTimeWindow: { Mode: 'FLEXIBLE' } }))).toContain(
      'requires MaximumWindowInMinutes',
    );
  });
});

describe('ticks', () => {
  it('anchors a rate on the create time, to the second, and fires at once', () => {
    const s = valid(request({ ScheduleExpression: 'rate(5 minutes)' }));
    expect(ticks(s, NOW, NOW, 3)).toEqual([
      '2026-12-01T08:59:43.000Z',
      '2026-12-01T09:04:43.000Z',
      '2026-12-01T09:09:43.000Z',
    ]);
    expect(isoSeconds(nextTick(s, NOW, NOW)!)).toBe('2026-12-01T08:59:43Z');
  });

  it('starts a rate at its StartDate and stops before its EndDate', () => {
    const start = Date.parse('2026-12-01T10:00:00Z');
    const s = valid(
      request({
        ScheduleExpression: 'rate(1 hour)',
        StartDate: start / 1000,
        EndDate: (start + 2.5 * 3_600_000) / 1000,
      }),
    );
    expect(ticks(s, NOW, NOW, 5)).toEqual([
      '2026-12-01T10:00:00.000Z',
      '2026-12-01T11:00:00.000Z',
      '2026-12-01T12:00:00.000Z',
    ]);
  });

  it('evaluates cron in its zone, with L, # and W', () => {
    expect(ticks(valid(request({ ScheduleExpressionTimezone: 'America/New_York' })), NOW, NOW, 2)).toEqual([
      '2026-12-01T14:00:00.000Z',
      '2026-12-02T14:00:00.000Z',
    ]);
    expect(ticks(valid(request({ ScheduleExpression: 'cron(15 10 ? * 6L *)' })), NOW, NOW, 1)).toEqual([
      '2026-12-25T10:15:00.000Z',
    ]);
    expect(ticks(valid(request({ ScheduleExpression: 'cron(0 12 ? * 2#1 2027)' })), NOW, NOW, 1)).toEqual([
      '2027-01-04T12:00:00.000Z',
    ]);
    expect(ticks(valid(request({ ScheduleExpression: 'cron(0 0 L FEB ? 2028)' })), NOW, NOW, 1)).toEqual([
      '2028-02-29T00:00:00.000Z',
    ]);
    // 2027-05-01 is a Saturday: the nearest weekday in May is Monday the 3rd.
    expect(ticks(valid(request({ ScheduleExpression: 'cron(0 8 1W 5 ? 2027)' })), NOW, NOW, 1)).toEqual([
      '2027-05-03T08:00:00.000Z',
    ]);
  });

  it('skips a wall time the spring change removes and runs a repeated one once', () => {
    const spring = valid(
      request({ ScheduleExpression: 'cron(30 2 * 3 ? 2027)', ScheduleExpressionTimezone: 'Europe/Berlin' }),
    );
    // 2027-03-28 02:30 does not exist in Berlin (clocks go 02:00 -> 03:00).
    expect(ticks(spring, NOW, Date.parse('2027-03-27T00:00:00Z'), 2)).toEqual([
      '2027-03-27T01:30:00.000Z',
      '2027-03-29T00:30:00.000Z',
    ]);
    const autumn = valid(
      request({ ScheduleExpression: 'cron(30 * 31 10 ? 2027)', ScheduleExpressionTimezone: 'Europe/Berlin' }),
    );
    // 2027-10-31 02:30 happens twice in Berlin (CEST then CET); it fires once, at the first.
    expect(ticks(autumn, NOW, Date.parse('2027-10-30T23:00:00Z'), 4)).toEqual([
      '2027-10-30T23:30:00.000Z',
      '2027-10-31T00:30:00.000Z',
      '2027-10-31T02:30:00.000Z',
      '2027-10-31T03:30:00.000Z',
    ]);
  });

  it('keeps rate(1 day) at 24-hour durations across a DST change', () => {
    const s = valid(
      request({ ScheduleExpression: 'rate(1 day)', ScheduleExpressionTimezone: 'Europe/Berlin' }),
    );
    const anchor = Date.parse('2027-03-27T08:00:00Z');
    expect(ticks(s, anchor, anchor, 2)).toEqual(['2027-03-27T08:00:00.000Z', '2027-03-28T08:00:00.000Z']);
  });

  it('gives an at() schedule one tick', () => {
    const s = valid(
      request({ ScheduleExpression: 'at(2026-12-24T18:00:00)', ScheduleExpressionTimezone: 'Europe/Berlin' }),
    );
    expect(ticks(s, NOW, NOW, 3)).toEqual(['2026-12-24T17:00:00.000Z']);
  });
});
