/**
 * When a worker writes the outcome counters its store keeps (stats/outcome-recorder.ts): every
 * `intervalMs` from the heartbeat, as its metrics go (lifecycle-metrics.ts), and once more when its run
 * returns, before Lambda freezes the process. Writes are per interval, never per task, so a task's own
 * writes stay what they are.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { describeError } from '../errors.js';
import type { LeaseEvents } from '../events.js';
import type { LeaseStore } from '../store/ports.js';
import { logOutcomeFlush } from '../stats/outcome-recorder.js';

export interface OutcomeFlushes {
  /** Stops the interval flushes and writes what is left (bounded by the request deadline). */
  stop(): Promise<void>;
}

export function flushOutcomesEvery(
  events: LeaseEvents,
  store: Pick<LeaseStore, 'flushOutcomes'>,
  logger: Logger,
  options: { intervalMs: number; monotonic: () => number },
): OutcomeFlushes {
  const flush = async () => {
    try {
      if (store.flushOutcomes) logOutcomeFlush(logger, await store.flushOutcomes());
    } catch (error) {
      // A flush does not throw; a stand-in store's might. Never into the heartbeat.
      logger.warn('flushing the outcome counters failed', { error: describeError(error) });
    }
  };
  let flushedAt = options.monotonic();
  const off = events.on('heartbeat', () => {
    const now = options.monotonic();
    if (now - flushedAt < options.intervalMs) return;
    flushedAt = now;
    void flush();
  });
  return {
    stop: async () => {
      off();
      await flush();
    },
  };
}
