/**
 * CreateSchedule / UpdateSchedule requests validated the way EventBridge Scheduler validates them, and
 * the ticks of a valid schedule. Pure: the clock is passed in.
 *
 * Sources: the service model (botocore data/scheduler/2021-06-30/service-2.json: Name and GroupName
 * 1-64 `^[0-9a-zA-Z-_.]+$`, ScheduleExpression 1-256, ScheduleExpressionTimezone 1-50, Description
 * 0-512, ClientToken 1-64 `^[a-zA-Z0-9-_]+$`, RoleArn / DeadLetterConfig / KmsKeyArn patterns,
 * MaximumWindowInMinutes 1-1440, MaximumRetryAttempts 0-185, MaximumEventAgeInSeconds 60-86400, Input
 * min 1); Target.Input docs ("If you are configuring a templated Lambda ... the input must be a
 * well-formed JSON"); the StartDate message ("The StartDate you specify cannot be earlier than 5 minutes
 * ago", as Scheduler words it, quoted in getmoto/moto#8172); Scheduler "Schedule types" (rate units,
 * at(yyyy-mm-ddThh:mm:ss), StartDate/EndDate ignored for one-time schedules, a rate schedule without
 * StartDate "starts invoking the target immediately", a day is 24 hours).
 *
 * Deliberately strict where Scheduler's behaviour is undocumented (the point is to expose requests that
 * might fail): canonical zone names only (time-zones.ts), at() in the past refused, rate(1 minutes) /
 * rate(5 minute) refused (EventBridge rules' documented rule), Input over 256 KB refused (the model has
 * no maximum; 256 KB is EventBridge's event size), a Lambda target's Input must be JSON.
 */
import * as z from 'zod';
import { CronError, nextCronTick, parseCron, type CronSpec } from './cron.js';
import { checkTimeZone, instantOfWallClock } from './time-zones.js';

export const INPUT_MAX_BYTES = 256 * 1024;
export const DEFAULT_RETRY_POLICY = { MaximumEventAgeInSeconds: 86_400, MaximumRetryAttempts: 185 } as const;

const NAME = /^[0-9a-zA-Z-_.]+$/;
const ROLE_ARN = /^arn:aws(-[a-z]+)?:iam::\d{12}:role\/[\w+=,.@/-]+$/;
const SQS_ARN = /^arn:aws(-[a-z]+)?:sqs:[a-z0-9-]+:\d{12}:[a-zA-Z0-9-_]+$/;
const KMS_ARN = /^arn:aws(-[a-z]+)?:kms:[a-z0-9-]+:\d{12}:(key|alias)\/[0-9a-zA-Z-_]*$/;

// Constraint texts as Scheduler's (Coral) validation words them.
const str = (min: number, max?: number, pattern?: RegExp) => {
  let s = z.string().min(min, `Member must have length greater than or equal to ${min}`);
  if (max !== undefined) s = s.max(max, `Member must have length less than or equal to ${max}`);
  return pattern ? s.regex(pattern, `Member must satisfy regular expression pattern: ${pattern.source}`) : s;
};
const int = (min: number, max: number) =>
  z
    .number()
    .int('Member must be an integer')
    .min(min, `Member must have value greater than or equal to ${min}`)
    .max(max, `Member must have value less than or equal to ${max}`);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `Member must satisfy enum value set: [${values.join(', ')}]` });

const requestSchema = z.object({
  Name: str(1, 64, NAME),
  GroupName: str(1, 64, NAME).optional(),
  ScheduleExpression: str(1, 256),
  ScheduleExpressionTimezone: str(1, 50).optional(),
  StartDate: z.number().optional(),
  EndDate: z.number().optional(),
  Description: str(0, 512).optional(),
  State: oneOf(['ENABLED', 'DISABLED']).optional(),
  ActionAfterCompletion: oneOf(['NONE', 'DELETE']).optional(),
  KmsKeyArn: str(1, 2048, KMS_ARN).optional(),
  ClientToken: str(1, 64, /^[a-zA-Z0-9-_]+$/).optional(),
  FlexibleTimeWindow: z.object({
    Mode: oneOf(['OFF', 'FLEXIBLE']),
    MaximumWindowInMinutes: int(1, 1440).optional(),
  }),
  Target: z.object({
    Arn: str(1, 1600),
    RoleArn: str(1, 1600, ROLE_ARN),
    Input: str(1).optional(),
    RetryPolicy: z
      .object({
        MaximumEventAgeInSeconds: int(60, 86_400).optional(),
        MaximumRetryAttempts: int(0, 185).optional(),
      })
      .optional(),
    DeadLetterConfig: z.object({ Arn: str(1, 1600, SQS_ARN).optional() }).optional(),
  }),
});

type RawRequest = z.infer<typeof requestSchema>;

/** A valid request with Scheduler's defaults filled in (what GetSchedule answers). */
export interface ScheduleRequest extends Omit<
  RawRequest,
  'GroupName' | 'State' | 'ActionAfterCompletion' | 'ScheduleExpressionTimezone' | 'Target'
> {
  GroupName: string;
  State: 'ENABLED' | 'DISABLED';
  ActionAfterCompletion: 'NONE' | 'DELETE';
  ScheduleExpressionTimezone: string;
  Target: Omit<RawRequest['Target'], 'RetryPolicy'> & {
    RetryPolicy: { MaximumEventAgeInSeconds: number; MaximumRetryAttempts: number };
  };
}

export type ScheduleExpression =
  { kind: 'rate'; everyMs: number } | { kind: 'cron'; cron: CronSpec } | { kind: 'at'; at: number };

export interface ValidSchedule {
  request: ScheduleRequest;
  expression: ScheduleExpression;
}

export type Verdict =
  { ok: true; schedule: ValidSchedule } | { ok: false; problems: string[]; message: string };

export class ExpressionError extends Error {
  override name = 'ExpressionError';
}

const RATE_UNIT_MS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Parses rate(...), cron(...) or at(...); at() is read as a wall-clock time in `zone`. */
export function parseScheduleExpression(text: string, zone: string): ScheduleExpression {
  const m = /^(rate|cron|at)\((.*)\)$/.exec(text);
  if (!m) throw new ExpressionError('must be rate(value unit), cron(fields) or at(yyyy-mm-ddThh:mm:ss)');
  const [, kind, body] = m as unknown as [string, string, string];
  if (kind === 'cron') {
    try {
      return { kind: 'cron', cron: parseCron(body) };
    } catch (error) {
      if (error instanceof CronError) throw new ExpressionError(error.message);
      throw error;
    }
  }
  if (kind === 'rate') {
    const r = /^([1-9]\d*) (minute|minutes|hour|hours|day|days)$/.exec(body);
    if (!r)
      throw new ExpressionError(
        'rate(value unit) takes a positive whole number and minute(s), hour(s) or day(s)',
      );
    const value = Number(r[1]);
    const unit = r[2]!.replace(/s$/, '');
    if ((value === 1) !== !r[2]!.endsWith('s'))
      throw new ExpressionError(
        `write rate(${value} ${value === 1 ? unit : `${unit}s`}): the unit is singular for 1 and plural otherwise`,
      );
    return { kind: 'rate', everyMs: value * RATE_UNIT_MS[unit]! };
  }
  const a = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(body);
  if (!a)
    throw new ExpressionError(
      'at() takes yyyy-mm-ddThh:mm:ss, with no zone suffix or fraction (the zone is ScheduleExpressionTimezone)',
    );
  const [year, month, day, hour, minute, second] = a.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const naive = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  if (
    naive.getUTCMonth() !== month - 1 ||
    naive.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  )
    throw new ExpressionError(`${body} is not a real date and time`);
  const at = instantOfWallClock({ year, month, day, hour, minute, second }, zone);
  if (at === undefined)
    throw new ExpressionError(`${body} does not exist in ${zone} (the clocks skip it for daylight saving)`);
  return { kind: 'at', at };
}

function describe(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return `'${text.length > 100 ? `${text.slice(0, 100)}...` : text}'`;
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let v = input;
  for (const key of path)
    v = v && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[key] : undefined;
  return v;
}

export function isoSeconds(t: number): string {
  return `${new Date(Math.floor(t / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/** Validates a Create/UpdateSchedule request (the JSON body plus Name) at `now()`, returning every problem. */
export function validateScheduleRequest(input: unknown, now: () => number): Verdict {
  const parsed = requestSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const v = valueAt(input, issue.path);
      const path = issue.path.map((p) => String(p).replace(/^./, (c) => c.toLowerCase())).join('.');
      const message =
        v === undefined && issue.code === 'invalid_type' ? 'Member must not be null' : issue.message;
      return `Value ${describe(v)} at '${path}' failed to satisfy constraint: ${message}`;
    });
    return {
      ok: false,
      problems,
      message: `${problems.length} validation error${problems.length > 1 ? 's' : ''} detected: ${problems.join('; ')}`,
    };
  }
  const raw = parsed.data;
  const problems: string[] = [];
  const t = now();

  const zone = raw.ScheduleExpressionTimezone ?? 'UTC';
  const zoneVerdict = checkTimeZone(zone);
  if (!zoneVerdict.ok) problems.push(`Invalid ScheduleExpressionTimezone ${zone}: ${zoneVerdict.reason}.`);

  let expression: ScheduleExpression | undefined;
  try {
    expression = parseScheduleExpression(raw.ScheduleExpression, zoneVerdict.ok ? zone : 'UTC');
  } catch (error) {
    if (!(error instanceof ExpressionError)) throw error;
    problems.push(`Invalid Schedule Expression ${raw.ScheduleExpression}: ${error.message}.`);
  }
  if (expression?.kind === 'at' && zoneVerdict.ok && expression.at < Math.floor(t / 1000) * 1000) {
    problems.push(
      `Invalid Schedule Expression ${raw.ScheduleExpression}: ${isoSeconds(expression.at)} is in the past (now ${isoSeconds(t)}); a one-time schedule must be in the future.`,
    );
  }
  if (expression && expression.kind !== 'at') {
    // Scheduler ignores StartDate and EndDate for one-time schedules.
    const start = raw.StartDate === undefined ? undefined : raw.StartDate * 1000;
    const end = raw.EndDate === undefined ? undefined : raw.EndDate * 1000;
    if (start !== undefined && start < t - 5 * 60_000)
      problems.push('The StartDate you specify cannot be earlier than 5 minutes ago.');
    if (end !== undefined && end <= t)
      problems.push('The EndDate you specify cannot be earlier than the current time.');
    if (start !== undefined && end !== undefined && end <= start)
      problems.push('The EndDate you specify must be after the StartDate.');
  }

  const window = raw.FlexibleTimeWindow;
  if (window.Mode === 'FLEXIBLE' && window.MaximumWindowInMinutes === undefined)
    problems.push('FlexibleTimeWindow Mode FLEXIBLE requires MaximumWindowInMinutes (1-1440).');
  if (window.Mode === 'OFF' && window.MaximumWindowInMinutes !== undefined)
    problems.push('FlexibleTimeWindow MaximumWindowInMinutes is only allowed with Mode FLEXIBLE.');

  const targetInput = raw.Target.Input;
  if (targetInput !== undefined) {
    const bytes = Buffer.byteLength(targetInput, 'utf8');
    if (bytes > INPUT_MAX_BYTES)
      problems.push(`Target Input is ${bytes} bytes; the maximum is ${INPUT_MAX_BYTES} bytes (256 KB).`);
    else if (/^arn:aws(-[a-z]+)?:lambda:/.test(raw.Target.Arn) && !isJson(targetInput))
      problems.push('Target Input must be well-formed JSON for a Lambda target.');
  }
  if (problems.length || !expression) return { ok: false, problems, message: problems.join(' ') };

  const request: ScheduleRequest = {
    ...raw,
    GroupName: raw.GroupName ?? 'default',
    State: raw.State ?? 'ENABLED',
    ActionAfterCompletion: raw.ActionAfterCompletion ?? 'NONE',
    ScheduleExpressionTimezone: zone,
    Target: { ...raw.Target, RetryPolicy: { ...DEFAULT_RETRY_POLICY, ...raw.Target.RetryPolicy } },
  };
  return { ok: true, schedule: { request, expression } };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first tick at or after `fromMs` (to the second), or undefined when the schedule has no more.
 * `anchor` is when a rate schedule's rhythm began: its StartDate, else Scheduler's own create/update
 * time to the second ("starts invoking the target immediately"); ticks are anchor + k * rate, days
 * being 24-hour durations. Cron ticks are wall-clock minutes in the zone; EndDate stops recurring ones.
 */
export function nextTick(schedule: ValidSchedule, anchor: number, fromMs: number): number | undefined {
  const { request, expression } = schedule;
  // Ticks are whole seconds; one in the same second as `fromMs` is still due.
  const from = Math.floor(fromMs / 1000) * 1000;
  if (expression.kind === 'at') return expression.at >= from ? expression.at : undefined;
  const start = request.StartDate === undefined ? undefined : request.StartDate * 1000;
  const end = request.EndDate === undefined ? Infinity : request.EndDate * 1000;
  let tick: number | undefined;
  if (expression.kind === 'rate') {
    const base = Math.floor((start ?? anchor) / 1000) * 1000;
    tick = from <= base ? base : base + Math.ceil((from - base) / expression.everyMs) * expression.everyMs;
  } else {
    tick = nextCronTick(expression.cron, request.ScheduleExpressionTimezone, Math.max(from, start ?? from));
  }
  return tick !== undefined && tick < end ? tick : undefined;
}
