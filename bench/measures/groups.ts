/**
 * Measures 15 and 16: groups and fair shares (shared/group-rules.ts).
 *
 * 15. Grouped tasks at 1, 10 and 1,000 groups: 4 workers, each a runtime with its own SDK client, drain
 * no-op tasks spread over the groups (one at a time per group, the default). Reported per group count:
 * starts a second, and write requests per task against the same tasks without a group in the same run
 * (the group's slot take is the one write more a start may cost).
 *
 * 16. Fairness: 4 workers drain one owner's backlog (tasks of 100 ms) of a type with fair shares; a
 * second owner then enqueues one task. Reported: how long after its enqueue it started (the backlog still waiting), against
 * the poll interval, and against the same type without fair shares (where it waits behind the backlog).
 */
import { performance } from 'node:perf_hooks';
import { benchTable, drain, quietLogger, sum, type BenchRuntime } from '../bench-runtime.js';
import { measure, round, sleep, type BenchContext, type Measure } from '../measure.js';
import { Worker } from '../../shared/worker/worker.js';
import { RecordingMetrics } from '../../shared/metrics.js';

const WORKERS = 4;
const TASK_MS = 100;

/** Enqueues `count` no-op tasks from 16 lanes, task n in the group `groupOf(n)` (none when undefined). */
async function enqueueInGroups(
  r: BenchRuntime,
  count: number,
  input: (n: number) => { type: string; owner?: string; group?: string },
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        const n = next++;
        await r.store.enqueue({ owner: 'bench', payload: { n }, ...input(n) });
      }
    }),
  );
}

/** Drains `tasks` no-op tasks in `groups` groups (0: ungrouped); starts a second and writes per task. */
async function drainGrouped(ctx: BenchContext, tasks: number, groups: number) {
  const table = await benchTable(ctx.endpoint, `groups-${groups}`);
  const runtimes = Array.from({ length: WORKERS }, () => table.runtime());
  await enqueueInGroups(runtimes[0]!, tasks, (n) => ({
    type: 'bench.noop',
    ...(groups > 0 ? { group: `g${n % groups}` } : {}),
  }));
  for (const r of runtimes) r.meter.reset();
  const result = await drain(runtimes, tasks, { timeoutMs: 300_000 });
  const writes = sum(runtimes.map((r) => r.meter.count('UpdateItem', 'PutItem')));
  for (const r of runtimes) r.client.destroy();
  return {
    perSecond: (tasks / result.elapsedMs) * 1_000,
    writesPerTask: writes / tasks,
    lost: result.lostRaces,
  };
}

export async function groupedStarts(ctx: BenchContext): Promise<Measure[]> {
  const tasks = ctx.quick ? 300 : 2_000;
  const plain = await drainGrouped(ctx, tasks, 0);
  const out: Measure[] = [];
  for (const groups of [1, 10, 1_000]) {
    const g = await drainGrouped(ctx, tasks, groups);
    const extra = g.writesPerTask - plain.writesPerTask;
    ctx.log(
      `${groups} groups: ${round(g.perSecond, 1)} starts/s, ${round(g.writesPerTask, 3)} writes a task (ungrouped ${round(plain.writesPerTask, 3)} at ${round(plain.perSecond, 1)}/s)`,
    );
    const parameters = { tasks, workers: WORKERS, groups, ungroupedPerSecond: round(plain.perSecond, 1) };
    out.push(
      measure({
        group: '15. groups',
        name: `starts a second, ${groups} group${groups === 1 ? '' : 's'}`,
        value: round(g.perSecond, 1),
        unit: 'tasks/s',
        parameters,
      }),
      measure({
        group: '15. groups',
        name: `write requests per task beyond an ungrouped task, ${groups} group${groups === 1 ? '' : 's'}`,
        value: round(extra, 3),
        unit: 'writes',
        // The group's slot: one small write a start, plus give-backs of claims that lost their race.
        target: { op: '<=', value: 1.1 },
        parameters: { ...parameters, writesPerTask: round(g.writesPerTask, 3) },
      }),
    );
  }
  return out;
}

/** How long a lone owner's task waits behind `backlog` tasks of another owner, with fair shares or without. */
async function loneOwnerDelay(ctx: BenchContext, backlog: number, type: 'bench.fair' | 'bench.wait') {
  const table = await benchTable(ctx.endpoint, `fair-${type}`);
  const runtimes = Array.from({ length: WORKERS }, () => table.runtime());
  // Tasks of 100 ms: 4 workers run about 400 a second, so the backlog outlasts the measurement.
  const busy = { payload: { ms: TASK_MS } };
  await enqueueInGroups(runtimes[0]!, backlog, () => ({ type, owner: 'big', ...busy }));
  const stop = new AbortController();
  let startedAt = 0;
  let enqueuedAt = 0;
  for (const r of runtimes)
    r.store.events.on('claim:won', ({ taskId }) => {
      if (taskId === loneId && startedAt === 0) {
        startedAt = performance.now();
        stop.abort();
      }
    });
  let loneId = '';
  const runs = runtimes.map((r, i) =>
    new Worker({
      store: r.store,
      events: r.store.events,
      registry: r.registry,
      config: r.config,
      workerId: `bench-fair-${i}`,
      types: [type],
      logger: quietLogger(),
      metrics: new RecordingMetrics(),
    }).run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY, place: { index: i, of: WORKERS } }),
  );
  await sleep(1_000); // the workers are busy with the backlog
  // From a process of its own (as a producer is): no worker here is handed the task by key.
  const producer = table.runtime();
  enqueuedAt = performance.now();
  loneId = (await producer.store.enqueue({ type, owner: 'lone', ...busy })).task.id;
  producer.client.destroy();
  const guard = setTimeout(() => stop.abort(), 120_000);
  await Promise.all(runs);
  clearTimeout(guard);
  for (const r of runtimes) r.client.destroy();
  return {
    delayMs: startedAt === 0 ? Number.POSITIVE_INFINITY : startedAt - enqueuedAt,
    pollMs: table.config.pollIntervalMs,
  };
}

export async function fairShares(ctx: BenchContext): Promise<Measure[]> {
  const backlog = ctx.quick ? 2_000 : 10_000;
  const fair = await loneOwnerDelay(ctx, backlog, 'bench.fair');
  const unfair = await loneOwnerDelay(ctx, backlog, 'bench.wait');
  ctx.log(
    `lone owner's task behind ${backlog}: started after ${round(fair.delayMs, 0)} ms with fair shares, ${round(unfair.delayMs, 0)} ms without`,
  );
  const parameters = {
    backlog,
    taskMs: TASK_MS,
    workers: WORKERS,
    pollIntervalMs: fair.pollMs,
    withoutFairSharesMs: round(unfair.delayMs, 0),
  };
  return [
    measure({
      group: '16. fair shares',
      name: `start delay of a lone owner's task behind ${backlog} of another's`,
      value: round(fair.delayMs, 0),
      unit: 'ms',
      // A claim round or two, a poll interval at most: never the backlog's drain.
      target: { op: '<=', value: fair.pollMs },
      parameters,
    }),
  ];
}
