/**
 * Measure 13: a burst as a ratio. Issue 15's target (1,000 tasks due at one instant start within 2 s)
 * depends on the machine; the ratio does not. In the same run and against the same dynalite: how fast
 * the store takes bare conditional writes (one UpdateItem with a condition per item, as many in flight
 * as the workers have slots), and how fast workers start a backlog that is all ready at once (every
 * task a `bench.wait` long enough that none finishes, and so writes, while the others start). A start
 * costs at least one conditional write (the claim), so the ratio is at most about 1.
 */
import { performance } from 'node:perf_hooks';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { INDEX } from '../../shared/table-layout.js';
import { Worker } from '../../shared/worker/worker.js';
import { benchTable, enqueueMany, quietLogger, type BenchRuntime } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

const WORKERS = 8;
/**
 * Long enough that no task of the burst finishes before the last one starts, short enough that they
 * then end as they started (spread out): each worker returns once idle.
 */
const TASK_MS = 10_000;

export async function burstRatio(ctx: BenchContext): Promise<Measure[]> {
  const tasks = ctx.quick ? 400 : 1_000;
  // Runs alternate, best of each (as the throughput measure's): the first of either runs on code the
  // JIT has not warmed yet, and one run of each let the bare rate vary by half between runs.
  const repeats = ctx.quick ? 1 : 3;
  const concurrency = Math.ceil(tasks / WORKERS);
  const bare: number[] = [];
  const starts: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const table = await benchTable(ctx.endpoint, `burst-${i}`, {
      workerConcurrency: concurrency,
      leaseTimeoutMs: 60_000,
      heartbeatIntervalMs: 10_000,
      clockSkewMs: 5_000,
      requestDeadlineMs: 5_000,
    });
    const r = table.runtime();
    try {
      bare.push(await bareConditionalWrites(r, tasks, WORKERS * Math.min(concurrency, 32)));
      await enqueueMany(r.store, tasks, 16, { type: 'bench.wait', payload: { ms: TASK_MS } });
      starts.push(await burstStarts(r, tasks));
    } finally {
      r.client.destroy();
    }
  }
  const writesPerS = Math.max(...bare);
  const startsPerS = Math.max(...starts);
  const ratio = startsPerS / writesPerS;
  ctx.log(
    `${tasks} ready tasks on ${WORKERS} workers: ${startsPerS.toFixed(0)} starts/s; bare conditional writes ${writesPerS.toFixed(0)}/s (best of ${repeats}; starts ${starts.map((v) => v.toFixed(0)).join(', ')}; bare ${bare.map((v) => v.toFixed(0)).join(', ')})`,
  );
  return [
    measure({
      group: '13. burst',
      name: 'burst starts / bare conditional writes, dynalite',
      value: round(ratio, 3),
      unit: 'ratio',
      target: { op: '>=', value: 0.8 },
      parameters: {
        tasks,
        workers: WORKERS,
        workerConcurrency: concurrency,
        repeats,
        startsPerS: round(startsPerS, 1),
        conditionalWritesPerS: round(writesPerS, 1),
        startsPerSRuns: starts.map((v) => round(v, 1)),
        conditionalWritesPerSRuns: bare.map((v) => round(v, 1)),
      },
    }),
  ];
}

/** Starts `WORKERS` workers on a backlog of `tasks` ready tasks; starts per second until the last one started. */
async function burstStarts(r: BenchRuntime, tasks: number): Promise<number> {
  let started = 0;
  let lastAt = 0;
  const workers = Array.from(
    { length: WORKERS },
    (_, i) =>
      new Worker({
        store: r.store,
        registry: r.registry,
        config: r.config,
        workerId: `burst-worker-${i}`,
        types: ['bench.wait'],
        logger: quietLogger(),
      }),
  );
  for (const w of workers)
    w.events.on('handler:start', () => {
      lastAt = performance.now();
      started++;
    });
  const t0 = performance.now();
  // Each placed as the fleet places its invocations (its seat of the cap): they start at different shards.
  await Promise.all(workers.map((w, i) => w.run({ idleStopMs: 1_000, place: { index: i, of: WORKERS } })));
  if (lastAt - t0 >= TASK_MS)
    throw new Error('the burst took longer than its tasks: the ratio would count completions');
  if (started < tasks) throw new Error(`the burst did not start: ${started} of ${tasks} tasks started`);
  return tasks / ((lastAt - t0) / 1000);
}

/**
 * `tasks` items, then one conditional UpdateItem each from `lanes` lanes: writes per second. Each item
 * and write has the index work of a claim (the item leaves the ready index and enters the sweep index),
 * so the emulator does per write what it does per claim.
 */
async function bareConditionalWrites(r: BenchRuntime, tasks: number, lanes: number): Promise<number> {
  const { doc, config } = r;
  const key = (n: number) => ({ pk: `BAREW#${n}`, sk: 'TASK' });
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < tasks) {
        const n = next++;
        await doc.send(
          new PutCommand({
            TableName: config.tableName,
            Item: {
              ...key(n),
              status: 'QUEUED',
              [INDEX.ready.partition]: `barew#${n % 16}`,
              [INDEX.ready.sort]: `${Date.now()}#${n}`,
            },
          }),
        );
      }
    }),
  );
  next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < tasks) {
        const n = next++;
        await doc.send(
          new UpdateCommand({
            TableName: config.tableName,
            Key: key(n),
            UpdateExpression: 'SET #s = :running, #wp = :sweep, #ws = :until REMOVE #rp, #rs',
            ConditionExpression: '#s = :queued',
            ExpressionAttributeNames: {
              '#s': 'status',
              '#rp': INDEX.ready.partition,
              '#rs': INDEX.ready.sort,
              '#wp': INDEX.lease.partition,
              '#ws': INDEX.lease.sort,
            },
            ExpressionAttributeValues: {
              ':running': 'RUNNING',
              ':queued': 'QUEUED',
              ':sweep': `BAREW#${n % 16}`,
              ':until': Date.now() + 60_000,
            },
          }),
        );
      }
    }),
  );
  return tasks / ((performance.now() - t0) / 1000);
}
