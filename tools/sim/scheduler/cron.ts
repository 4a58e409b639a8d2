/**
 * EventBridge cron expressions, parsed and evaluated the way Scheduler documents them, independently of
 * Croner (which accepts 5- and 7-field Unix/Quartz forms, day-of-week 0, and both day fields set).
 *
 * Rules (EventBridge "Cron expressions reference"; Scheduler "Schedule types"):
 *   six fields: minutes hours day-of-month month day-of-week year
 *   minutes 0-59 , - * /   hours 0-23 , - * /   day-of-month 1-31 , - * ? / L W
 *   month 1-12 or JAN-DEC , - * /   day-of-week 1-7 or SUN-SAT (1 = SUN) , - * ? L #   year 1970-2199 , - * /
 *   exactly one of day-of-month and day-of-week is "?".
 * Evaluated in a time zone on the wall clock. Daylight saving (Scheduler "Schedule types"): a tick whose
 * wall time does not exist (spring forward) is skipped; a wall time that happens twice (fall back) runs once.
 */
import { instantOfWallClock, wallClockAt } from './time-zones.js';

export class CronError extends Error {
  override name = 'CronError';
}

interface Day {
  year: number;
  month: number;
  day: number;
  /** 1 = Sunday ... 7 = Saturday, as EventBridge numbers them. */
  weekday: number;
  daysInMonth: number;
}

export interface CronSpec {
  minutes: number[];
  hours: number[];
  months: ReadonlySet<number>;
  years: ReadonlySet<number>;
  day: (d: Day) => boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
export const MAX_YEAR = 2199;

interface FieldRule {
  label: string;
  min: number;
  max: number;
  names?: string[];
}

const FIELDS = {
  minutes: { label: 'minutes', min: 0, max: 59 },
  hours: { label: 'hours', min: 0, max: 23 },
  dayOfMonth: { label: 'day-of-month', min: 1, max: 31 },
  month: { label: 'month', min: 1, max: 12, names: MONTHS },
  dayOfWeek: { label: 'day-of-week', min: 1, max: 7, names: WEEKDAYS },
  year: { label: 'year', min: 1970, max: MAX_YEAR },
} satisfies Record<string, FieldRule>;

function value(text: string, rule: FieldRule): number {
  const named = rule.names?.indexOf(text.toUpperCase()) ?? -1;
  const n = named >= 0 ? named + 1 : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= rule.min && n <= rule.max)) {
    const names = rule.names ? ` or ${rule.names[0]}-${rule.names.at(-1)}` : '';
    throw new CronError(`${rule.label} value "${text}" is outside ${rule.min}-${rule.max}${names}`);
  }
  return n;
}

/** One list field of numbers: a, a-b, *, a/s, * /s, a-b/s, joined by commas. */
function numbers(text: string, rule: FieldRule): Set<number> {
  const out = new Set<number>();
  for (const item of text.split(',')) {
    const m = /^(\*|[A-Za-z0-9]+)(?:-([A-Za-z0-9]+))?(?:\/(\d+))?$/.exec(item);
    if (!m)
      throw new CronError(
        `${rule.label} item "${item}" is not a value, range or increment (${rule.label === 'day-of-week' ? 'SUN-SAT or 1-7' : `${rule.min}-${rule.max}`})`,
      );
    const [, startText, endText, stepText] = m as unknown as [
      string,
      string,
      string | undefined,
      string | undefined,
    ];
    if (startText === '*' && endText) throw new CronError(`${rule.label} item "${item}" is not valid`);
    const start = startText === '*' ? rule.min : value(startText, rule);
    const end = endText ? value(endText, rule) : startText === '*' || stepText ? rule.max : start;
    const step = stepText ? Number(stepText) : 1;
    // Wrapping ranges (FRI-MON) are not documented for EventBridge; this strict reference refuses them.
    if (start > end) throw new CronError(`${rule.label} range "${item}" runs backwards`);
    if (step < 1) throw new CronError(`${rule.label} increment in "${item}" must be at least 1`);
    for (let n = start; n <= end; n += step) out.add(n);
  }
  return out;
}

function nearestWeekday(target: number, d: Day): number {
  if (target > d.daysInMonth) return -1;
  const weekday = (((d.weekday - 1 + (target - d.day)) % 7) + 7) % 7; // 0 = Sunday
  if (weekday === 6) return target === 1 ? target + 2 : target - 1;
  if (weekday === 0) return target === d.daysInMonth ? target - 2 : target + 1;
  return target;
}

function dayOfMonthMatcher(text: string): (d: Day) => boolean {
  const tests = text.split(',').map((item): ((d: Day) => boolean) => {
    if (item === 'L') return (d) => d.day === d.daysInMonth;
    const w = /^(\d+)W$/.exec(item);
    if (w) {
      const target = value(w[1]!, FIELDS.dayOfMonth);
      return (d) => d.day === nearestWeekday(target, d);
    }
    const set = numbers(item, FIELDS.dayOfMonth);
    return (d) => set.has(d.day);
  });
  return (d) => tests.some((t) => t(d));
}

function dayOfWeekMatcher(text: string): (d: Day) => boolean {
  const tests = text.split(',').map((item): ((d: Day) => boolean) => {
    if (item === 'L') return (d) => d.weekday === 7;
    const last = /^([A-Za-z0-9]+)L$/.exec(item);
    if (last) {
      const wd = value(last[1]!, FIELDS.dayOfWeek);
      return (d) => d.weekday === wd && d.day + 7 > d.daysInMonth;
    }
    const nth = /^([A-Za-z0-9]+)#(\d+)$/.exec(item);
    if (nth) {
      const wd = value(nth[1]!, FIELDS.dayOfWeek);
      const k = Number(nth[2]);
      if (k < 1 || k > 5) throw new CronError(`day-of-week "${item}": the number after # must be 1-5`);
      return (d) => d.weekday === wd && Math.ceil(d.day / 7) === k;
    }
    const set = numbers(item, FIELDS.dayOfWeek);
    return (d) => set.has(d.weekday);
  });
  return (d) => tests.some((t) => t(d));
}

/** Parses the inside of cron(...); throws CronError saying what EventBridge would refuse. */
export function parseCron(body: string): CronSpec {
  const fields = body.trim().split(/\s+/);
  if (fields.length !== 6) {
    throw new CronError(
      `a cron expression has six fields (minutes hours day-of-month month day-of-week year), got ${fields.length}`,
    );
  }
  const [minutes, hours, dom, month, dow, year] = fields as [string, string, string, string, string, string];
  for (const [text, rule] of [
    [minutes, FIELDS.minutes],
    [hours, FIELDS.hours],
    [month, FIELDS.month],
    [year, FIELDS.year],
  ] as const) {
    if (text.includes('?'))
      throw new CronError(`? is allowed only in day-of-month or day-of-week, not in ${rule.label}`);
  }
  if ((dom === '?') === (dow === '?')) {
    throw new CronError(
      dom === '?'
        ? 'day-of-month and day-of-week cannot both be ?'
        : 'one of day-of-month and day-of-week must be ? (EventBridge does not combine them)',
    );
  }
  if (dom !== '?' && dom.includes('?')) throw new CronError('? must stand alone in day-of-month');
  if (dow !== '?' && dow.includes('?')) throw new CronError('? must stand alone in day-of-week');
  const domTest = dom === '?' ? undefined : dayOfMonthMatcher(dom);
  const dowTest = dow === '?' ? undefined : dayOfWeekMatcher(dow);
  return {
    minutes: [...numbers(minutes, FIELDS.minutes)].sort((a, b) => a - b),
    hours: [...numbers(hours, FIELDS.hours)].sort((a, b) => a - b),
    months: numbers(month, FIELDS.month),
    years: numbers(year, FIELDS.year),
    day: (d) => (domTest ?? dowTest)!(d),
  };
}

/** The first tick at or after `from` (ms) in `zone`, or undefined when there is none before 2200. */
export function nextCronTick(spec: CronSpec, zone: string, from: number): number | undefined {
  const start = wallClockAt(from, zone);
  let date = Date.UTC(start.year, start.month - 1, start.day);
  const lastYear = Math.max(...spec.years);
  for (;;) {
    const c = new Date(date);
    const year = c.getUTCFullYear();
    const month = c.getUTCMonth() + 1;
    if (year > lastYear) return undefined;
    if (!spec.years.has(year)) {
      date = Date.UTC(year + 1, 0, 1);
      continue;
    }
    if (!spec.months.has(month)) {
      date = Date.UTC(year, month, 1);
      continue;
    }
    const day: Day = {
      year,
      month,
      day: c.getUTCDate(),
      weekday: c.getUTCDay() + 1,
      daysInMonth: new Date(Date.UTC(year, month, 0)).getUTCDate(),
    };
    if (spec.day(day)) {
      const firstDay = date === Date.UTC(start.year, start.month - 1, start.day);
      for (const hour of spec.hours) {
        if (firstDay && hour < start.hour) continue;
        for (const minute of spec.minutes) {
          if (firstDay && hour === start.hour && minute < start.minute) continue;
          // undefined: the clocks skip this wall time (spring forward), so the tick is skipped.
          const t = instantOfWallClock({ year, month, day: day.day, hour, minute, second: 0 }, zone);
          if (t !== undefined && t >= from) return t;
        }
      }
    }
    date += 86_400_000;
  }
}
