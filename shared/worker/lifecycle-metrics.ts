/**
 * The worker's figures, counted from the lifecycle stream: the worker and its executions emit each
 * step once, and this subscriber turns them into counters and timings. A long invocation sends its
 * figures every `flushIntervalMs` from the heartbeat (alarms evaluate one-minute periods, and an
 * invocation Lambda kills at its timeout never reaches the end).
 */
import type { LeaseEvents } from '../events.js';
import { METRICS_FLUSH_INTERVAL_MS, type CounterName, type LeaseholdMetrics } from '../metrics.js';

const FINISHED_COUNTERS: Record<string, CounterName> = {
  SUCCESS: 'TasksSucceeded',
  RETRYING: 'TasksRetried',
  FAILED: 'TasksFailed',
  CANCELLED: 'TasksCancelled',
  RELEASED: 'TasksReleased',
};

const TERMINAL = new Set(['SUCCESS', 'FAILED', 'CANCELLED']);

export interface LifecycleMetricsOptions {
  flushIntervalMs?: number;
  /** Monotonic milliseconds (performance.now in production). */
  monotonic: () => number;
}

/** Subscribes `metrics` to the worker's steps; returns the unsubscribe function. */
export function countLifecycle(
  events: LeaseEvents,
  metrics: LeaseholdMetrics,
  options: LifecycleMetricsOptions,
): () => void {
  const flushEvery = options.flushIntervalMs ?? METRICS_FLUSH_INTERVAL_MS;
  let flushedAt = options.monotonic();
  const off = [
    events.on('claim:round', ({ claimed, lostRaces }) => {
      metrics.count('Claims', claimed);
      metrics.count('WastedClaimWrites', lostRaces);
    }),
    events.on('renew', ({ outcome }) => {
      metrics.count('LeaseRenewals');
      if (outcome === 'renewed' || outcome === 'cancel-requested') metrics.count('LeaseRenewalsOk');
    }),
    events.on('lease:lost', () => metrics.count('LeasesLost')),
    events.on('handler:start', ({ queueWaitMs }) => metrics.timing('QueueWait', queueWaitMs)),
    events.on('write:answered', ({ outcome }) => {
      if (outcome === 'refused') metrics.count('LateCompletionsRejected');
    }),
    events.on('task:finished', ({ status, by, durationMs, type, owner, cost }) => {
      // Recovery's own function counts its fixes; a claimer that recovered a stranded task does not.
      if (by !== 'worker') return;
      metrics.count(FINISHED_COUNTERS[status]!);
      if (durationMs !== undefined) metrics.timing('TaskDuration', durationMs);
      // Once per task, when it ends: its cost covers every attempt, so a retried attempt adds nothing yet.
      if (cost && owner !== undefined && TERMINAL.has(status)) metrics.taskCost(type, owner, cost);
    }),
    events.on('task:promoted', () => metrics.count('DelayedPromoted')),
    events.on('heartbeat', ({ lagMs }) => {
      metrics.timing('EventLoopLag', lagMs);
      const now = options.monotonic();
      if (now - flushedAt >= flushEvery) {
        flushedAt = now;
        metrics.flush();
      }
    }),
  ];
  return () => off.forEach((unsubscribe) => unsubscribe());
}
