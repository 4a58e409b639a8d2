/**
 * Which ticks of a schedule have no fire (missed), and when the next one is. Cron and one-time ticks
 * are exact minutes and seconds, and a fire's scheduled time matches them exactly. A rate schedule's
 * rhythm is EventBridge Scheduler's own: it starts when Scheduler created or updated the schedule, a
 * moment after the PUT that the table records, and Scheduler states scheduled times to the second. So
 * rate ticks are placed on the newest fire actually seen (else on the PUT), and a fire within a
 * tolerance of a tick is that tick.
 */
import { fireTimes, latestFireTimes, rateTicks, type ScheduleExpression } from './schedule-expression.js';
import type { FireRecord } from './schedule-model.js';

/**
 * How far a rate fire's scheduled time may sit from the tick computed here and still be that tick:
 * half the shortest rate (1 minute), so one fire can never stand for two ticks. Scheduler's offset
 * from the PUT (its own clock, its whole seconds) is far smaller.
 */
export const RATE_TICK_TOLERANCE_MS = 30_000;

/** Where a rate schedule's ticks fall: on the newest fire of its current rhythm (since `anchor`, its last change), else on the anchor. */
export function ratePhase(anchor: number, fires: readonly FireRecord[]): number {
  const newest = fires.reduce<number | undefined>(
    (max, f) => (max === undefined || f.scheduledTime > max ? f.scheduledTime : max),
    undefined,
  );
  return newest !== undefined && newest > anchor ? newest : anchor;
}

/**
 * The ticks in (after, until] that no fire in `fires` stands for: the newest `max` of them, oldest
 * first. `anchor` is when the current definition's rhythm began (its last PUT); no tick is expected
 * before it, nor at it (Scheduler may or may not invoke a new rate schedule at once).
 */
export function missedTicks(
  expression: ScheduleExpression,
  anchor: number,
  fires: readonly FireRecord[],
  after: number,
  until: number,
  max = 100,
): number[] {
  // Enough expected ticks that, after removing those that fired, `max` missed ones are left if there are.
  const want = max + fires.length;
  if (expression.kind !== 'rate') {
    const seen = new Set(fires.map((f) => f.scheduledTime));
    return latestFireTimes(expression, Math.max(after, anchor), until, anchor, want)
      .filter((t) => !seen.has(t))
      .slice(-max);
  }
  const from = Math.max(after, anchor + RATE_TICK_TOLERANCE_MS);
  const expected = rateTicks(expression.everyMs, ratePhase(anchor, fires), from, until, want);
  return expected
    .filter((t) => !fires.some((f) => Math.abs(f.scheduledTime - t) <= RATE_TICK_TOLERANCE_MS))
    .slice(-max);
}

/** The next tick after `now`; for a rate schedule placed on `latest`, the newest fire seen, when it belongs to the current rhythm. */
export function nextTick(
  expression: ScheduleExpression,
  anchor: number,
  now: number,
  latest?: FireRecord,
): number | undefined {
  if (expression.kind === 'rate') {
    const phase = ratePhase(anchor, latest ? [latest] : []);
    return rateTicks(expression.everyMs, phase, Math.max(now, anchor), Number.MAX_SAFE_INTEGER, 1, true)[0];
  }
  return fireTimes(expression, now, now + 400 * 86_400_000, anchor, 1)[0];
}
