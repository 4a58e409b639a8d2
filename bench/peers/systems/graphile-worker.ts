/**
 * graphile-worker with its own defaults except concurrency (set to Leasehold's, as for every row):
 * `run()` migrates its schema, then its workers LISTEN on "jobs:insert", which addJob NOTIFYs, and
 * poll every `pollInterval` (default 2 s) only for jobs due later. The producer is the runner's own
 * addJob, on the runner's pool.
 */
import { Logger, run } from 'graphile-worker';
import type { OpenSystem } from '../types.js';

/** graphile-worker logs every job at info; the benchmark prints only its own figures. */
const silent = new Logger(() => () => undefined);

export function graphileWorker(connectionString: string, concurrency: number): OpenSystem {
  return async (started) => {
    const runner = await run({
      connectionString,
      concurrency,
      noHandleSignals: true,
      logger: silent,
      taskList: {
        stamp: async (payload) => {
          started((payload as { n: number }).n);
        },
      },
    });
    return {
      enqueue: (n) => runner.addJob('stamp', { n }),
      stop: () => runner.stop(),
    };
  };
}
