/**
 * EventBridge Scheduler expressions, evaluated locally: `rate(5 minutes)`, `cron(0 9 ? * MON-FRI *)`
 * (minutes hours day-of-month month day-of-week year, with ? L W #) and `at(2026-12-01T09:00:00)`,
 * in an IANA time zone with its daylight-saving changes. Cron evaluation is Croner's (7-part mode,
 * Quartz weekday numbering 1 = Sunday, as EventBridge uses); only the EventBridge rules on top are here.
 */
import { Cron } from 'croner';
import { LeaseholdError } from '../errors.js';

export type ScheduleExpression =
  { kind: 'rate'; everyMs: number } | { kind: 'cron'; cron: Cron } | { kind: 'at'; at: number };

/** A schedule expression (or its time zone) that cannot be evaluated; the message says what to write instead. */
export class ExpressionError extends LeaseholdError {
  override name = 'ExpressionError';
  override readonly code = 'SCHEDULE_EXPRESSION_INVALID';
  override readonly status = 400;
}

const RATE_UNITS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export function isValidTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** Parses an expression or throws ExpressionError saying what is wrong with it. */
export function parseExpression(expression: string, timezone = 'UTC'): ScheduleExpression {
  if (!isValidTimeZone(timezone))
    throw new ExpressionError(
      `"${timezone}" is not an IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)`,
    );
  const match = /^(rate|cron|at)\((.*)\)$/.exec(expression.trim());
  if (!match)
    throw new ExpressionError(
      'must be rate(...), cron(...) or at(...), e.g. rate(5 minutes), cron(0 9 ? * MON-FRI *), at(2026-12-01T09:00:00)',
    );
  const [, kind, body] = match as unknown as [string, 'rate' | 'cron' | 'at', string];
  if (kind === 'rate') return parseRate(body);
  if (kind === 'at') return parseAt(body, timezone);
  return parseCron(body, timezone);
}

function parseRate(body: string): ScheduleExpression {
  const m = /^(\d+) (minute|minutes|hour|hours|day|days)$/.exec(body.trim());
  if (!m)
    throw new ExpressionError(
      'rate(...) takes a whole number and a unit: rate(1 minute), rate(5 minutes), rate(2 hours), rate(1 day)',
    );
  const value = Number(m[1]);
  const unit = m[2]!;
  if (value < 1) throw new ExpressionError('a rate must be at least 1');
  const singular = !unit.endsWith('s');
  if ((value === 1) !== singular)
    throw new ExpressionError(
      `write rate(${value} ${value === 1 ? unit.replace(/s$/, '') : `${unit.replace(/s$/, '')}s`}): EventBridge uses the singular unit for 1 and the plural otherwise`,
    );
  return { kind: 'rate', everyMs: value * RATE_UNITS[unit.replace(/s$/, '')]! };
}

function parseCron(body: string, timezone: string): ScheduleExpression {
  const fields = body.trim().split(/\s+/);
  if (fields.length !== 6)
    throw new ExpressionError(
      `cron(...) takes 6 fields (minutes hours day-of-month month day-of-week year); got ${fields.length}`,
    );
  const [, , dayOfMonth, , dayOfWeek] = fields as [string, string, string, string, string, string];
  // EventBridge: exactly one of the two day fields is "?" (there is no OR of both).
  if ((dayOfMonth === '?') === (dayOfWeek === '?'))
    throw new ExpressionError(
      'cron(...): exactly one of day-of-month and day-of-week must be "?", e.g. cron(0 9 ? * MON-FRI *) or cron(0 9 1 * ? *)',
    );
  try {
    // sloppyRanges: EventBridge writes "every 15 minutes from 0" as 0/15, which strict Croner refuses.
    return {
      kind: 'cron',
      cron: new Cron(`0 ${fields.join(' ')}`, {
        timezone,
        mode: '7-part',
        alternativeWeekdays: true,
        sloppyRanges: true,
        paused: true,
      }),
    };
  } catch (error) {
    throw new ExpressionError(`cron(...): ${(error as Error).message.replace(/^CronPattern: /, '')}`);
  }
}

function parseAt(body: string, timezone: string): ScheduleExpression {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(body.trim());
  if (!m)
    throw new ExpressionError(
      'at(...) takes a local date-time without a zone, e.g. at(2026-12-01T09:00:00); give the zone as timezone',
    );
  const [, y, mo, d, h, mi, s] = m;
  // The wall-clock time in the zone, found as the one run of a cron pattern that names it exactly.
  let cron: Cron;
  try {
    cron = new Cron(`${Number(s)} ${Number(mi)} ${Number(h)} ${Number(d)} ${Number(mo)} ? ${y}`, {
      timezone,
      mode: '7-part',
      paused: true,
    });
  } catch (error) {
    throw new ExpressionError(`at(...): ${(error as Error).message.replace(/^CronPattern: /, '')}`);
  }
  const at = cron.nextRun(new Date(Date.UTC(Number(y) - 1, 0, 1)));
  if (!at) throw new ExpressionError(`at(${body}) is not a time that exists in ${timezone}`);
  return { kind: 'at', at: at.getTime() };
}

/** True for a one-time schedule, `at(...)`. */
export const isOneTime = (expression: string) => /^at\(/.test(expression.trim());

/**
 * The ticks phase + k * everyMs (k any whole number) in (after, until]: the newest `limit` of them, or
 * with `oldest` the first `limit`; oldest first either way.
 */
export function rateTicks(
  everyMs: number,
  phase: number,
  after: number,
  until: number,
  limit: number,
  oldest = false,
): number[] {
  let first = Math.floor((after - phase) / everyMs) + 1;
  let last = Math.floor((until - phase) / everyMs);
  if (oldest) last = Math.min(last, first + limit - 1);
  else first = Math.max(first, last - limit + 1);
  const out: number[] = [];
  for (let k = first; k <= last; k++) out.push(phase + k * everyMs);
  return out;
}

/**
 * The fire times in (after, until], oldest first, at most `limit` (the first ones). Rate schedules tick
 * from `anchor` (when their rhythm began: the schedule's last change), as EventBridge's do.
 */
export function fireTimes(
  expression: ScheduleExpression,
  after: number,
  until: number,
  anchor: number,
  limit = 1000,
): number[] {
  switch (expression.kind) {
    case 'at':
      return expression.at > after && expression.at <= until ? [expression.at] : [];
    case 'rate':
      return rateTicks(expression.everyMs, anchor, Math.max(after, anchor), until, limit, true);
    case 'cron': {
      const out: number[] = [];
      let cursor = new Date(after);
      while (out.length < limit) {
        const next = expression.cron.nextRun(cursor);
        if (!next || next.getTime() > until) break;
        out.push(next.getTime());
        cursor = next;
      }
      return out;
    }
  }
}

/** The last `limit` fire times in (after, until], oldest first: however long the span, the recent end. */
export function latestFireTimes(
  expression: ScheduleExpression,
  after: number,
  until: number,
  anchor: number,
  limit: number,
): number[] {
  switch (expression.kind) {
    case 'at':
      return fireTimes(expression, after, until, anchor);
    case 'rate':
      return rateTicks(expression.everyMs, anchor, Math.max(after, anchor), until, limit);
    case 'cron':
      // previousRuns is exclusive of its reference: one millisecond on includes a tick at `until`.
      return expression.cron
        .previousRuns(limit, new Date(until + 1))
        .map((d) => d.getTime())
        .filter((t) => t > after)
        .reverse();
  }
}
