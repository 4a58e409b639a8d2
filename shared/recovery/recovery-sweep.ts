/**
 * One bounded recovery sweep with its figures recorded, and the outcomes of its fixes flushed to the
 * per-minute counters: shared by the recovery Lambda and the local stack's timer.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { RecoveryReport } from '../store/recovery.js';
import type { Sweeper } from '../store/ports.js';
import type { GaugeRotation } from '../store/gauge-rotation.js';
import type { LegacyDelayWatch } from '../store/legacy-delays.js';
import type { Clock } from '../clock.js';
import type { LeaseholdMetrics } from '../metrics.js';
import { describeError } from '../errors.js';
import { logOutcomeFlush } from '../stats/outcome-recorder.js';

/** Before the sweep, so a moved task due already is promoted by this very sweep. Never stops the sweep. */
async function lookForLegacyDelays(store: Sweeper, watch: LegacyDelayWatch, clock: Clock, logger: Logger) {
  try {
    const moves = await store.moveLegacyDelays();
    watch.noteLook(moves.moved, clock.now());
    if (moves.found > 0)
      logger.info('moved delayed tasks queued before the delay index into it', { ...moves });
  } catch (error) {
    logger.warn('moving delayed tasks into the delay index failed; the next sweep tries again', {
      error: describeError(error),
    });
  }
}

/**
 * `types`: the task types whose queue depth is published as gauges, in all and per type (none: no
 * gauges). `legacy`: the caller's watch for delayed tasks queued before the delay index (legacy-delays.ts).
 */
export async function runRecoverySweep(
  store: Sweeper,
  deps: {
    clock: Clock;
    metrics: LeaseholdMetrics;
    logger: Logger;
    rotation?: GaugeRotation;
    legacy?: LegacyDelayWatch;
  },
  types: string[] = [],
): Promise<RecoveryReport> {
  const { clock, metrics, logger } = deps;
  try {
    if (deps.legacy?.shouldLook(clock.now())) await lookForLegacyDelays(store, deps.legacy, clock, logger);
    // With gauges, each sweep partition is read once for both the fixes and the figures.
    const swept =
      types.length > 0
        ? await store.sweepAndMeasure(types, deps.rotation)
        : { report: await store.recover() };
    const { report } = swept;
    if ('depth' in swept) {
      const { depth } = swept;
      // 0 when nothing waits, so the alarm on it sees a value every sweep (missing data would hide a stall).
      const ageOf = (dueAt: number | undefined) =>
        dueAt === undefined ? 0 : Math.max(0, clock.now() - dueAt);
      metrics.gauge('QueueDepth', depth.ready + depth.delayed);
      metrics.gauge('ReadyTasks', depth.ready);
      metrics.gauge('RunningTasks', depth.leased);
      metrics.gauge('OldestDueAgeMs', ageOf(depth.oldestDueAt));
      for (const [type, typed] of Object.entries(depth.byType)) {
        metrics.typeGauge(type, 'ReadyTasks', typed.ready);
        metrics.typeGauge(type, 'OldestDueAgeMs', ageOf(typed.oldestDueAt));
      }
      // What the worker's next scheduled tick reads to learn whether it has anything to do (one item).
      await store
        .writeSummary({
          writtenAt: clock.now(),
          readyTypes: Object.keys(depth.byType).filter((t) => depth.byType[t]!.ready > 0),
          leased: depth.leased,
          ...(depth.nextDueAt === undefined ? {} : { nextDueAt: depth.nextDueAt }),
          types: Object.entries(depth.byType).map(([type, typed]) => ({
            type,
            ready: typed.ready,
            ...(typed.oldestDueAt === undefined ? {} : { oldestDueAt: typed.oldestDueAt }),
            estimated: typed.basis !== 'counted',
          })),
          delayed: depth.delayed,
        })
        .catch((error: unknown) =>
          logger.warn('writing the queue summary failed; the worker ticks poll until the next one', {
            error: describeError(error),
          }),
        );
      // Past a few hundred tasks per partition the gauges are estimates (store/queue-depth.ts says how close).
      if (!depth.exact)
        logger.info('queue depth estimated', {
          basis: depth.basis,
          estimatedTypes: Object.keys(depth.byType).filter((t) => depth.byType[t]!.basis !== 'counted'),
        });
    }
    metrics.count('RecoveredRequeued', report.requeued);
    metrics.count('RecoveredFailed', report.failed);
    metrics.count('RecoveredCancelled', report.cancelled);
    metrics.count('DelayedPromoted', report.promoted);
    const { fixes: _fixes, errors, ...counts } = report;
    if (errors.length > 0)
      logger.warn('some recovery requests failed; the next sweep retries them', {
        errors: errors.slice(0, 10),
        count: errors.length,
      });
    if (report.truncated)
      logger.warn('recovery stopped at its batch limit; the next sweep continues', counts);
    else logger.info('recovery sweep done', counts);
    return report;
  } finally {
    // The sweep's fixes (requeued, failed, cancelled) in the owners' per-minute outcome counters.
    logOutcomeFlush(logger, await store.flushOutcomes());
    metrics.flush();
  }
}
