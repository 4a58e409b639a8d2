/**
 * What the measures share: a fresh table, runtimes on it (each with its own SDK client, as separate
 * workers have), the benchmark's task types, and a drain that stops the workers the moment the last
 * task succeeded (so no idle wait is counted).
 */
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { defineConfig, type ConfigInput, type LeaseholdConfig } from '../shared/config.js';
import { createDynamoClient, documentClientFor } from '../shared/store/dynamo.js';
import { ensureTable } from '../shared/store/table-setup.js';
import { TaskStore } from '../shared/store/task-store.js';
import { defineTask } from '../shared/tasks/define.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { RecordingMetrics, type CounterName } from '../shared/metrics.js';
import { Worker, type RunSummary } from '../shared/worker/worker.js';
import { RequestMeter } from '../test/support/request-meter.js';

/** Handlers that do nothing (the queue's own cost is what is measured), or wait for `ms`. */
export const BENCH_TASKS = [
  defineTask({ name: 'bench.noop', schema: z.unknown(), handler: () => null }),
  defineTask({
    name: 'bench.wait',
    schema: z.object({ ms: z.number().int().min(0) }),
    handler: ({ ms }, ctx) => new Promise((r) => setTimeout(r, ms)).then(() => ctx.signal.aborted),
  }),
  // Measure 16's type: its owners share its claims in turn.
  defineTask({
    name: 'bench.fair',
    schema: z.object({ ms: z.number().int().min(0) }),
    fairShares: true,
    handler: ({ ms }) => new Promise((r) => setTimeout(r, ms)).then(() => null),
  }),
  // Measure 17's parent: answers how many children it read (ctx.children).
  defineTask({
    name: 'bench.parent',
    schema: z.unknown(),
    handler: (_payload, ctx) => ({ children: ctx.children.length }),
  }),
  // Measure 14's type: 50 starts in any second, across every worker.
  defineTask({
    name: 'bench.limited',
    schema: z.unknown(),
    rateLimit: { limit: 50, intervalMs: 1_000 },
    handler: () => null,
  }),
];

/**
 * Leases of seconds, so a task whose claim answer was cut off by the deadline (32 runtimes on one
 * event loop queue their requests) is recovered within the run instead of minutes later.
 */
export const BENCH_CONFIG: ConfigInput = {
  pollIntervalMs: 1_000,
  leaseTimeoutMs: 10_000,
  heartbeatIntervalMs: 2_000,
  clockSkewMs: 1_000,
  requestDeadlineMs: 1_500,
};

export const quietLogger = () => new Logger({ serviceName: 'leasehold-bench', logLevel: 'ERROR' });

let tables = 0;

export interface BenchRuntime {
  config: LeaseholdConfig;
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  store: TaskStore;
  registry: TaskRegistry;
  meter: RequestMeter;
}

/** A new table on the endpoint; returns a factory of runtimes on it. */
export async function benchTable(
  endpoint: string,
  name: string,
  overrides: ConfigInput = {},
): Promise<{ config: LeaseholdConfig; runtime: () => BenchRuntime }> {
  const config = defineConfig({
    ...BENCH_CONFIG,
    ...overrides,
    tableName: `bench-${name}-${++tables}-${Date.now()}`,
    dynamodbEndpoint: endpoint,
  });
  const setup = createDynamoClient(config);
  await ensureTable(setup, config.tableName);
  setup.destroy();
  const registry = new TaskRegistry(BENCH_TASKS, config);
  return {
    config,
    runtime: () => {
      const client = createDynamoClient(config);
      const meter = new RequestMeter();
      meter.attach(client);
      const doc = documentClientFor(client);
      const store = new TaskStore({
        doc,
        config,
        definitionRateLimits: registry.rateLimits(),
        definitionGrouping: registry.grouping(),
      });
      return { config, client, doc, store, registry, meter };
    },
  };
}

/** Enqueues `count` tasks from `lanes` parallel lanes; returns the elapsed milliseconds. */
export async function enqueueMany(
  store: TaskStore,
  count: number,
  lanes: number,
  input: { type: string; payload?: unknown } = { type: 'bench.noop' },
): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) {
        const n = next++;
        await store.enqueue({ owner: 'bench', payload: { n }, ...input });
      }
    }),
  );
  return performance.now() - started;
}

/** Counts successes across workers and fires once the last expected one is in. Keeps no per-task figures. */
class ProgressMetrics extends RecordingMetrics {
  constructor(private readonly onCount: (name: CounterName, value: number) => void) {
    super();
  }
  override count(name: CounterName, value = 1): void {
    super.count(name, value);
    this.onCount(name, value);
  }
  override timing(): void {}
}

export interface DrainResult {
  elapsedMs: number;
  claimed: number;
  lostRaces: number;
  summaries: RunSummary[];
}

/**
 * Runs one worker per runtime until `total` tasks succeeded, then stops them (they drain and return).
 * `types`: what the workers serve (default the one type the drained tasks have, bench.noop).
 */
export async function drain(
  runtimes: BenchRuntime[],
  total: number,
  options: { concurrency?: number; timeoutMs?: number; types?: string[] } = {},
): Promise<DrainResult> {
  const stop = new AbortController();
  let succeeded = 0;
  let finishedAt = 0;
  const started = performance.now();
  const onCount = (name: CounterName, value: number) => {
    if (name !== 'TasksSucceeded') return;
    succeeded += value;
    if (succeeded >= total && finishedAt === 0) {
      finishedAt = performance.now();
      stop.abort();
    }
  };
  setMaxListeners(runtimes.length + 10, stop.signal);
  const guard = setTimeout(() => stop.abort(), options.timeoutMs ?? 300_000);
  // As deployed, recovery runs beside the workers: a claim whose answer never came is fixed once its lease runs out.
  // Its requests go through a client of its own, outside the runtimes' meters.
  const recoveryClient = createDynamoClient(runtimes[0]!.config);
  const recoveryStore = new TaskStore({
    doc: documentClientFor(recoveryClient),
    config: runtimes[0]!.config,
  });
  const recovery = setInterval(() => void recoveryStore.recover().catch(() => undefined), 1_000);
  const summaries = await Promise.all(
    runtimes.map((r, i) => {
      const config = options.concurrency ? { ...r.config, workerConcurrency: options.concurrency } : r.config;
      const worker = new Worker({
        store: r.store,
        events: r.store.events,
        registry: r.registry,
        config,
        workerId: `bench-worker-${i}`,
        types: options.types ?? ['bench.noop'],
        logger: quietLogger(),
        metrics: new ProgressMetrics(onCount),
      });
      // Placed as the fleet places its invocations (a seat of the cap): they start at different shards.
      return worker.run({
        stop: stop.signal,
        idleStopMs: Number.POSITIVE_INFINITY,
        place: { index: i, of: runtimes.length },
      });
    }),
  );
  clearTimeout(guard);
  clearInterval(recovery);
  recoveryClient.destroy();
  if (finishedAt === 0) throw new Error(`the drain did not finish: ${succeeded} of ${total} tasks succeeded`);
  return {
    elapsedMs: finishedAt - started,
    claimed: sum(summaries.map((s) => s.claimed)),
    lostRaces: sum(summaries.map((s) => s.lostRaces)),
    summaries,
  };
}

export const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
