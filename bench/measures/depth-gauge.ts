/**
 * Measure 9: what one queue-depth gauge (store.depth, recovery's every minute) costs and how close it is,
 * with 0, 10,000 and 100,000 tasks of one type waiting (quick: 0, 2,000 and 20,000). Its requests and
 * read units must stay flat as the backlog grows (target: read units at the largest backlog within
 * 1.5x of those at the middle one); reading every entry, as the gauge once did, costs in proportion.
 * Tasks are written as their enqueues would have, created four per millisecond (timekeeper-seed.ts).
 */
import { performance } from 'node:perf_hooks';
import type { EnqueueInput } from '../../shared/task-inputs.js';
import { createTestStore, type TestStore } from '../../test/support/test-store.js';
import { seedEnqueued } from '../../test/support/timekeeper-seed.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

const TYPE = 'bench.depth';
/** Tasks created per millisecond: 4,000 a second, a busy producer. */
const PER_MS = 4;

interface GaugeFigures {
  waiting: number;
  estimate: number;
  basis: string;
  queries: number;
  /** As dynalite reports them: an empty query reports 0. */
  readUnits: number;
  /** As DynamoDB bills them: at least half a unit per query. */
  billedReadUnits: number;
  ms: number;
}

export async function depthGauge(ctx: BenchContext): Promise<Measure[]> {
  const group = '9. depth gauge';
  const sizes = ctx.quick ? [0, 2_000, 20_000] : [0, 10_000, 100_000];
  const t = await createTestStore(ctx.endpoint);
  const perQuery = recordQueryUnits(t);
  const from = t.clock.now();
  const figures: GaugeFigures[] = [];
  let written = 0;
  for (const waiting of sizes) {
    await seedCreatedOverTime(t, {
      count: waiting - written,
      perMs: PER_MS,
      from: from + written / PER_MS,
      input: (n) => ({ type: TYPE, owner: 'bench', payload: { n } }),
      prefix: `w${written}-`,
    });
    written = waiting;
    t.meter.reset();
    perQuery.length = 0;
    const started = performance.now();
    const depth = await t.store.depth([TYPE]);
    const ms = performance.now() - started;
    const f: GaugeFigures = {
      waiting,
      estimate: depth.ready,
      basis: depth.basis.ready,
      queries: t.meter.count('Query'),
      readUnits: t.meter.capacity.get('Query') ?? 0,
      billedReadUnits: perQuery.reduce((sum, units) => sum + Math.max(0.5, units), 0),
      ms: round(ms, 1),
    };
    figures.push(f);
    ctx.log(
      `${waiting} waiting: estimate ${f.estimate} (${f.basis}), ${f.queries} queries, ${f.readUnits} read units (${f.billedReadUnits} billed), ${f.ms} ms`,
    );
  }
  t.client.destroy();

  const [, middle, largest] = figures as [GaugeFigures, GaugeFigures, GaugeFigures];
  const parameters = {
    type: TYPE,
    createdPerMs: PER_MS,
    figures,
    fullReadUnitsAtLargest: round((largest.waiting * 145) / 4096 / 2, 1),
    note: 'fullReadUnitsAtLargest: what reading every ready entry (about 145 bytes keys-only) would cost',
  };
  const error = (f: GaugeFigures) =>
    round((100 * Math.abs(f.estimate - f.waiting)) / Math.max(1, f.waiting), 2);
  return [
    ...figures.map((f) =>
      measure({
        group,
        name: `queries per gauge, ${f.waiting.toLocaleString('en')} waiting`,
        value: f.queries,
        unit: 'requests',
        parameters: { waiting: f.waiting, basis: f.basis },
      }),
    ),
    ...figures.map((f) =>
      measure({
        group,
        name: `read units per gauge, ${f.waiting.toLocaleString('en')} waiting`,
        value: f.billedReadUnits,
        unit: 'RCU',
        parameters: { waiting: f.waiting, reportedByDynalite: f.readUnits },
        note: 'billed: each query at least 0.5 units (eventually consistent), which dynalite does not report for an empty one',
      }),
    ),
    measure({
      group,
      name: `read units, ${largest.waiting.toLocaleString('en')} / ${middle.waiting.toLocaleString('en')} waiting`,
      value: round(largest.billedReadUnits / middle.billedReadUnits, 3),
      unit: 'ratio',
      target: { op: '<=', value: 1.5 },
      parameters,
      note: 'flat: the gauge reads a bounded number of entries whatever the backlog',
    }),
    ...figures
      .filter((f) => f.waiting > 0)
      .map((f) =>
        measure({
          group,
          name: `estimate error, ${f.waiting.toLocaleString('en')} waiting`,
          value: error(f),
          unit: '%',
          parameters: { waiting: f.waiting, estimate: f.estimate, basis: f.basis },
        }),
      ),
  ];
}

/**
 * Writes `count` tasks as their enqueues would have (timekeeper-seed.ts), `perMs` of them per
 * millisecond of creation from `from`: each millisecond's tasks are built with a clock of their own,
 * so creation times are spread as a steady producer's are. The test of the gauge uses it too.
 */
export async function seedCreatedOverTime(
  t: TestStore,
  seed: { count: number; perMs: number; from: number; input: (n: number) => EnqueueInput; prefix: string },
): Promise<void> {
  const chunks = Array.from({ length: Math.ceil(seed.count / seed.perMs) }, (_, c) => c);
  for (let wave = 0; wave < chunks.length; wave += 250)
    await Promise.all(
      chunks.slice(wave, wave + 250).map((c) =>
        seedEnqueued(
          { ...t, storeClock: { now: () => seed.from + c } },
          Array.from({ length: Math.min(seed.perMs, seed.count - c * seed.perMs) }, (_, i) =>
            seed.input(c * seed.perMs + i),
          ),
          `${seed.prefix}${c}-`,
        ),
      ),
    );
}

/** The read units DynamoDB reported for each query on the test store's client, in order. */
function recordQueryUnits(t: TestStore): number[] {
  const units: number[] = [];
  t.client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (context.commandName === 'QueryCommand')
        units.push(
          (out.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity?.CapacityUnits ??
            0,
        );
      return out;
    },
    { step: 'deserialize', name: 'depthGaugeQueryUnits', priority: 'high' },
  );
  return units;
}
