/**
 * Measure 4: enqueue-to-start latency with a warm, idle worker at the default poll interval. Tasks
 * arrive one at a time at random gaps; each handler notes how long after its enqueue it started.
 */
import { performance } from 'node:perf_hooks';
import * as z from 'zod';
import { defineTask } from '../../shared/tasks/define.js';
import { TaskRegistry } from '../../shared/tasks/registry.js';
import { RecordingMetrics } from '../../shared/metrics.js';
import { Worker } from '../../shared/worker/worker.js';
import { benchTable, quietLogger } from '../bench-runtime.js';
import { measure, percentile, round, sleep, type BenchContext, type Measure } from '../measure.js';

export async function enqueueToStart(ctx: BenchContext): Promise<Measure[]> {
  const tasks = ctx.quick ? 40 : 200;
  const table = await benchTable(ctx.endpoint, 'latency');
  const { pollIntervalMs } = table.config;
  const r = table.runtime();
  const enqueuedAt = new Map<number, number>();
  const latencies: number[] = [];
  const stamp = defineTask({
    name: 'bench.stamp',
    schema: z.object({ n: z.number().int() }),
    handler: ({ n }) => void latencies.push(performance.now() - enqueuedAt.get(n)!),
  });
  const registry = new TaskRegistry([stamp], table.config);
  const stop = new AbortController();
  const worker = new Worker({
    store: r.store,
    events: r.store.events,
    registry,
    config: table.config,
    workerId: 'bench-latency',
    logger: quietLogger(),
    metrics: new RecordingMetrics(),
  });
  const running = worker.run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
  await sleep(2 * pollIntervalMs); // warm: a few empty polls behind it
  for (let n = 0; n < tasks; n++) {
    await sleep(Math.random() * 150);
    enqueuedAt.set(n, performance.now());
    await r.store.enqueue({ type: 'bench.stamp', owner: 'bench', payload: { n } });
  }
  for (let waited = 0; latencies.length < tasks && waited < 10 * pollIntervalMs; waited += 50)
    await sleep(50);
  stop.abort();
  await running;
  r.client.destroy();
  if (latencies.length < tasks) throw new Error(`only ${latencies.length} of ${tasks} tasks started`);
  const sorted = [...latencies].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  ctx.log(`p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms at a poll interval of ${pollIntervalMs} ms`);
  const parameters = { tasks, pollIntervalMs, arrivalGapMs: 'uniform 0-150', max: round(sorted.at(-1)!, 1) };
  return [
    measure({
      group: '4. enqueue to start',
      name: 'latency p50',
      value: round(p50, 1),
      unit: 'ms',
      parameters: { ...parameters, ratioToPoll: round(p50 / pollIntervalMs, 3) },
    }),
    measure({
      group: '4. enqueue to start',
      name: 'latency p99',
      value: round(p99, 1),
      unit: 'ms',
      target: { op: '<=', value: pollIntervalMs + 100 },
      parameters: { ...parameters, ratioToPoll: round(p99 / pollIntervalMs, 3) },
      note: 'an idle worker polls; a task waits at most one poll interval plus the claim',
    }),
  ];
}
