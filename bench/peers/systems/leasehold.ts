/**
 * Leasehold through its public API, as the repo's own latency measure builds it
 * (bench/measures/latency.ts): a bench table on dynalite with the bench's settings, one runtime whose
 * store enqueues, and a Worker on the same runtime (sharing its events, so whatever the store tells an
 * idle worker in-process, it hears). Recovery sweeps beside it every second, as deployed, in case a
 * claim answer is cut off by the request deadline during the burst.
 */
import * as z from 'zod';
import { defineConfig } from '../../../shared/config.js';
import { RecordingMetrics } from '../../../shared/metrics.js';
import { defineTask } from '../../../shared/tasks/define.js';
import { TaskRegistry } from '../../../shared/tasks/registry.js';
import { Worker } from '../../../shared/worker/worker.js';
import { BENCH_CONFIG, benchTable, quietLogger } from '../../bench-runtime.js';
import type { OpenSystem } from '../types.js';

const TYPE = 'peers.stamp';

export function leasehold(endpoint: string): OpenSystem {
  return async (started) => {
    const table = await benchTable(endpoint, 'peers-leasehold');
    const r = table.runtime();
    const stamp = defineTask({
      name: TYPE,
      schema: z.object({ n: z.number().int() }),
      handler: ({ n }) => void started(n),
    });
    const stop = new AbortController();
    const worker = new Worker({
      store: r.store,
      events: r.store.events,
      registry: new TaskRegistry([stamp], table.config),
      config: table.config,
      workerId: 'bench-peers',
      logger: quietLogger(),
      metrics: new RecordingMetrics(),
    });
    const running = worker.run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
    const recovery = setInterval(() => void r.store.recover().catch(() => undefined), 1_000);
    return {
      enqueue: (n) => r.store.enqueue({ type: TYPE, owner: 'bench', payload: { n } }),
      async stop() {
        clearInterval(recovery);
        stop.abort();
        await running;
        r.client.destroy();
      },
    };
  };
}

/** The settings the Leasehold row runs with (benchTable's: the defaults plus BENCH_CONFIG), for the doc. */
export function leaseholdSettings(): { pollIntervalMs: number; workerConcurrency: number } {
  const config = defineConfig(BENCH_CONFIG);
  return { pollIntervalMs: config.pollIntervalMs, workerConcurrency: config.workerConcurrency };
}
