/** One bounded recovery sweep with its figures recorded: shared by the recovery Lambda and the local stack's timer. */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { RecoveryReport } from '../store/recovery.js';
import type { Sweeper } from '../store/ports.js';
import type { Clock } from '../clock.js';
import type { LeaseholdMetrics } from '../metrics.js';

/** `types`: the task types whose queue depth is published as a gauge (none: no gauges). */
export async function runRecoverySweep(
  store: Sweeper,
  deps: { clock: Clock; metrics: LeaseholdMetrics; logger: Logger },
  types: string[] = [],
): Promise<RecoveryReport> {
  const { clock, metrics, logger } = deps;
  try {
    const report = await store.recover();
    if (types.length > 0) {
      const depth = await store.depth(types);
      metrics.gauge('QueueDepth', depth.ready + depth.delayed);
      metrics.gauge('ReadyTasks', depth.ready);
      metrics.gauge('RunningTasks', depth.leased);
      // 0 when nothing waits, so the alarm on it sees a value every sweep (missing data would hide a stall).
      metrics.gauge(
        'OldestDueAgeMs',
        depth.oldestDueAt === undefined ? 0 : Math.max(0, clock.now() - depth.oldestDueAt),
      );
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
    metrics.flush();
  }
}
