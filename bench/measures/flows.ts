/**
 * Measure 17: a flow of 1,000 children (shared/store/flow-enqueue.ts). One parent (bench.parent, which
 * reads ctx.children) over 1,000 no-op children, drained by 4 workers. Reported: the time from the
 * flow's enqueue to the parent's SUCCESS, and write requests per child against the same 1,000 tasks
 * enqueued and run without a parent in the same run (a child's end costs one count on its parent, and
 * the flow one write more, its readiness).
 */
import { performance } from 'node:perf_hooks';
import { benchTable, drain, enqueueMany, sum } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

const WORKERS = 4;
const TYPES = ['bench.noop', 'bench.parent'];

async function runFlow(ctx: BenchContext, children: number) {
  const table = await benchTable(ctx.endpoint, 'flow');
  const runtimes = Array.from({ length: WORKERS }, () => table.runtime());
  const started = performance.now();
  const flow = await runtimes[0]!.store.enqueueFlow({
    owner: 'bench',
    root: {
      task: { type: 'bench.parent', payload: null },
      children: Array.from({ length: children }, (_, n) => ({
        task: { type: 'bench.noop', payload: { n } },
      })),
    },
  });
  const enqueuedMs = performance.now() - started;
  await drain(runtimes, children + 1, { types: TYPES, timeoutMs: 600_000 });
  const elapsedMs = performance.now() - started;
  const parent = await runtimes[0]!.store.get({ id: flow.task.id });
  const writes = sum(runtimes.map((r) => r.meter.count('UpdateItem', 'PutItem')));
  for (const r of runtimes) r.client.destroy();
  if (parent.status !== 'SUCCESS' || (parent.result as { children?: number }).children !== children)
    throw new Error(`the flow's parent ended ${parent.status} with ${JSON.stringify(parent.result)}`);
  return { elapsedMs, enqueuedMs, writesPerChild: writes / children };
}

async function runPlain(ctx: BenchContext, tasks: number) {
  const table = await benchTable(ctx.endpoint, 'flow-plain');
  const runtimes = Array.from({ length: WORKERS }, () => table.runtime());
  await enqueueMany(runtimes[0]!.store, tasks, 16);
  await drain(runtimes, tasks, { types: TYPES, timeoutMs: 600_000 });
  const writes = sum(runtimes.map((r) => r.meter.count('UpdateItem', 'PutItem')));
  for (const r of runtimes) r.client.destroy();
  return { writesPerTask: writes / tasks };
}

export async function flowOfChildren(ctx: BenchContext): Promise<Measure[]> {
  const children = 1_000;
  const flow = await runFlow(ctx, children);
  const plain = await runPlain(ctx, children);
  const extra = flow.writesPerChild - plain.writesPerTask;
  ctx.log(
    `flow of ${children}: parent SUCCESS ${round(flow.elapsedMs, 0)} ms after the enqueue (written in ${round(flow.enqueuedMs, 0)} ms); ${round(flow.writesPerChild, 3)} write requests a child, ${round(plain.writesPerTask, 3)} a task without a parent`,
  );
  const parameters = {
    children,
    workers: WORKERS,
    enqueueMs: round(flow.enqueuedMs, 0),
    writesPerChild: round(flow.writesPerChild, 3),
    writesPerTaskWithoutParent: round(plain.writesPerTask, 3),
  };
  return [
    measure({
      group: '17. flows',
      name: `time from a ${children}-child flow's enqueue to its parent's SUCCESS`,
      value: round(flow.elapsedMs, 0),
      unit: 'ms',
      parameters,
    }),
    measure({
      group: '17. flows',
      name: 'write requests per child beyond a task without a parent',
      value: round(extra, 3),
      unit: 'writes',
      // Its end counted on the parent (one write), and the parent's readiness shared by all.
      target: { op: '<=', value: 1.1 },
      parameters,
    }),
  ];
}
