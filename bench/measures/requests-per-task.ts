/**
 * Measure 1: DynamoDB requests and capacity per task, enqueue to SUCCESS, counted with SDK middleware
 * on the runtime's own client (each retry the SDK sends included). Write units add the index writes
 * DynamoDB bills and dynalite leaves out, computed from the item before and after each step.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { defineConfig } from '../../shared/config.js';
import { createDynamoClient, documentClientFor } from '../../shared/store/dynamo.js';
import { TaskStore } from '../../shared/store/task-store.js';
import { taskKey } from '../../shared/table-layout.js';
import { writeCost } from '../../shared/store/write-units.js';
import { ManualClock } from '../../test/support/manual-clock.js';
import {
  QUERY_OPERATIONS,
  READ_OPERATIONS,
  RequestMeter,
  WRITE_OPERATIONS,
} from '../../test/support/request-meter.js';
import { payloadSortKey } from '../../shared/store/body-layout.js';
import { benchTable, drain, enqueueMany, sum } from '../bench-runtime.js';
import { measure, round, type BenchContext, type Measure } from '../measure.js';

export async function requestsPerTask(ctx: BenchContext): Promise<Measure[]> {
  const group = '1. requests per task';
  const tasks = ctx.quick ? 480 : 2_000;
  const table = await benchTable(ctx.endpoint, 'requests');
  const r = table.runtime();
  await enqueueMany(r.store, tasks, 8);
  const enqueueWrites = r.meter.count(...WRITE_OPERATIONS);
  const enqueueUnits = sum([...r.meter.capacity.values()]);
  r.meter.reset();
  await drain([r], tasks);
  const byOperation = Object.fromEntries([...r.meter.sent].map(([op, n]) => [op, round(n / tasks, 4)]));
  // The outcome counters' flushes (one write per owner and minute when a worker returns or each minute
  // while it runs: shared/stats/) are the process's overhead, not a task's: counted apart.
  const counters = r.meter.partition('STATS');
  const writes = (enqueueWrites + r.meter.count(...WRITE_OPERATIONS) - counters.requests) / tasks;
  const queries = r.meter.count(...QUERY_OPERATIONS) / tasks;
  const reads = r.meter.count(...READ_OPERATIONS) / tasks;
  const readUnits =
    (sum(QUERY_OPERATIONS.map((op) => r.meter.capacity.get(op) ?? 0)) +
      sum(READ_OPERATIONS.map((op) => r.meter.capacity.get(op) ?? 0))) /
    tasks;
  const tableWriteUnits =
    (enqueueUnits + sum(WRITE_OPERATIONS.map((op) => r.meter.capacity.get(op) ?? 0)) - counters.capacity) /
    tasks;
  r.client.destroy();
  const parameters = {
    tasks,
    workerConcurrency: table.config.workerConcurrency,
    claimWindow: table.config.claimWindow,
    byOperation,
    outcomeCounterWrites: counters.requests,
  };

  const idleType = await queriesWithIdleType(ctx, tasks);
  const lifecycle = await sampledLifecycle(ctx.endpoint, table.config.tableName);
  const long = await longTask(ctx);
  const bySize = await costByPayloadSize(ctx.endpoint, table.config.tableName);
  return [
    measure({
      group,
      name: 'write requests per short task',
      value: round(writes, 4),
      unit: 'requests',
      target: { op: '<=', value: 3 },
      parameters,
    }),
    measure({
      group,
      name: 'queries per short task',
      value: round(queries, 4),
      unit: 'requests',
      target: { op: '<=', value: 0.25 },
      parameters,
    }),
    measure({
      group,
      name: 'queries per short task, worker also serving an idle type',
      value: idleType,
      unit: 'requests',
      parameters: {
        tasks,
        note: 'each empty partition (16 per type) costs a worker one query per poll interval',
      },
    }),
    measure({
      group,
      name: 'item reads per short task',
      value: round(reads, 4),
      unit: 'requests',
      parameters,
    }),
    measure({
      group,
      name: 'read units per short task',
      value: round(readUnits, 4),
      unit: 'RCU',
      target: { op: '<=', value: 0.5 },
      parameters: {
        ...parameters,
        source: 'ConsumedCapacity reported by dynalite (eventually consistent index queries)',
      },
    }),
    measure({
      group,
      name: 'write units per short task, index writes included',
      value: lifecycle.total,
      unit: 'WCU',
      target: { op: '<=', value: 8.5 },
      parameters: { steps: lifecycle.steps, tableUnitsReportedByDynalite: round(tableWriteUnits, 4) },
    }),
    measure({
      group,
      name: 'write units per renewal (mean of 5, default lease settings)',
      value: lifecycle.renewalMean,
      unit: 'WCU',
      target: { op: '<=', value: 1 },
      parameters: {
        renewals: lifecycle.renewals,
        leaseTimeoutMs: lifecycle.config.leaseTimeoutMs,
        heartbeatIntervalMs: lifecycle.config.heartbeatIntervalMs,
        clockSkewMs: lifecycle.config.clockSkewMs,
      },
      note: 'a renewal moves the sweep-index key only when the lease outruns the slack (lease - heartbeat - skew) it was filed with: 1 in 5 with the defaults, which costs 3 WCU instead of 1',
    }),
    measure({
      group,
      name: 'write requests per task that renews 5 times',
      value: long.writes,
      unit: 'requests',
      parameters: long.parameters,
    }),
    ...bySize.map((m) => measure({ group, ...m })),
  ];
}

/**
 * What a task's payload size costs (issue 16): payloads of 1, 10, 100 and 250 KB through the sampled
 * lifecycle. The task item is what claims, renewals and outcomes write, so their table units must not
 * grow with the payload; the payload is written once at enqueue and read once at claim.
 */
async function costByPayloadSize(endpoint: string, tableName: string) {
  const figures = [];
  for (const kb of [1, 10, 100, 250]) {
    const l = await sampledLifecycle(endpoint, tableName, { payloadBytes: kb * 1024 });
    const { claim, complete, enqueue, enqueueBody } = l.steps;
    const parameters = { payloadKb: kb, steps: l.steps, renewalTableUnits: l.renewalTableUnits };
    figures.push(
      {
        name: `claim + complete write units, task item only, ${kb} KB payload`,
        value: claim.table + complete.table,
        unit: 'WCU',
        target: { op: '<=' as const, value: 3 },
        parameters,
        note: `index writes on top: ${sum(Object.values(claim.indexes)) + sum(Object.values(complete.indexes))}`,
      },
      {
        name: `write units per renewal, task item only (most of 5), ${kb} KB payload`,
        value: Math.max(...l.renewalTableUnits),
        unit: 'WCU',
        target: { op: '<=' as const, value: 1 },
        parameters,
      },
      {
        name: `enqueue write units, ${kb} KB payload`,
        value: enqueue.total + (enqueueBody?.total ?? 0),
        unit: 'WCU',
        // The payload once (its size in 1 KB units, plus its few attributes), the task item and its index entries.
        target: { op: '<=' as const, value: Math.ceil((kb * 1024 + 100) / 1024) + enqueue.total },
        parameters,
      },
      {
        name: `claim read units (the payload's item), ${kb} KB payload`,
        value: l.claimReadUnits,
        unit: 'RCU',
        parameters,
      },
    );
  }
  return figures;
}

/** The same drain by a worker that also serves a second type with nothing queued. */
async function queriesWithIdleType(ctx: BenchContext, tasks: number): Promise<number> {
  const table = await benchTable(ctx.endpoint, 'idle-type');
  const r = table.runtime();
  await enqueueMany(r.store, tasks, 8);
  r.meter.reset();
  await drain([r], tasks, { types: ['bench.noop', 'bench.wait'] });
  r.client.destroy();
  return round(r.meter.count(...QUERY_OPERATIONS) / tasks, 4);
}

/**
 * One task through every step (enqueue, claim, 5 renewals a heartbeat apart, complete) on a store with
 * a manual clock and the default lease settings, reading the item after each write to cost it. With
 * `payloadBytes`, the payload is a string whose JSON is that long; a payload kept in its own item
 * (shared/store/body-layout.ts) is costed as a write at enqueue (`enqueueBody`) and a read at claim.
 */
export async function sampledLifecycle(
  endpoint: string,
  tableName: string,
  options: { payloadBytes?: number } = {},
) {
  const config = defineConfig({ tableName, dynamodbEndpoint: endpoint });
  const clock = new ManualClock(Date.now());
  const client = createDynamoClient(config);
  const meter = new RequestMeter();
  meter.attach(client);
  const doc = documentClientFor(client);
  const store = new TaskStore({ doc, config, clock });
  const read = async (id: string, sk = taskKey(id).sk) =>
    (
      await doc.send(
        new GetCommand({ TableName: tableName, Key: { ...taskKey(id), sk }, ConsistentRead: true }),
      )
    ).Item;
  try {
    const { task } = await store.enqueue({
      type: 'bench.sample',
      owner: 'someone@example.com',
      payload:
        options.payloadBytes === undefined
          ? { to: 'someone@example.com', template: 'welcome' }
          : 'x'.repeat(options.payloadBytes - 2),
    });
    const queued = await read(task.id);
    const body = task.payloadBytes === undefined ? undefined : await read(task.id, payloadSortKey());
    meter.reset();
    let { lease } = (await store.claim({ workerId: 'bench-sampler', types: ['bench.sample'], max: 1 }))
      .claimed[0]!;
    // The claim's payload read (eventually consistent); the ready-head query is the claim's own.
    const claimReadUnits = meter.capacity.get('GetItem') ?? 0;
    const running = await read(task.id);
    const renewals: number[] = [];
    /** The task item's own units per renewal, index writes aside: what a payload's size would change. */
    const renewalTableUnits: number[] = [];
    let before = running;
    for (let i = 0; i < 5; i++) {
      clock.advance(config.heartbeatIntervalMs);
      const [renewal] = await store.renew({ leases: [lease] });
      if (renewal?.outcome !== 'renewed')
        throw new Error(`renewal ${i + 1} of the sampled task did not renew: ${renewal?.outcome}`);
      lease = renewal.lease;
      const after = await read(task.id);
      const cost = writeCost(before, after);
      renewals.push(cost.total);
      renewalTableUnits.push(cost.table);
      before = after;
    }
    await store.complete({ lease, result: { ok: true } });
    const finished = await read(task.id);
    const steps = {
      enqueue: writeCost(undefined, queued),
      ...(body === undefined ? {} : { enqueueBody: writeCost(undefined, body) }),
      claim: writeCost(queued, running),
      complete: writeCost(before, finished),
    };
    const total = sum(Object.values(steps).map((s) => s.total));
    return {
      steps,
      total,
      renewals,
      renewalTableUnits,
      renewalMean: round(sum(renewals) / renewals.length, 3),
      claimReadUnits,
      config,
    };
  } finally {
    client.destroy();
  }
}

/** Tasks whose handler runs past five heartbeats, through the real worker runtime. */
async function longTask(ctx: BenchContext) {
  const tasks = ctx.quick ? 8 : 32;
  const heartbeatIntervalMs = 200;
  const table = await benchTable(ctx.endpoint, 'renewing', {
    leaseTimeoutMs: 2_000,
    heartbeatIntervalMs,
    clockSkewMs: 100,
    requestDeadlineMs: 150,
  });
  const r = table.runtime();
  await enqueueMany(r.store, tasks, 8, {
    type: 'bench.wait',
    payload: { ms: Math.round(heartbeatIntervalMs * 5.5) },
  });
  const enqueueWrites = r.meter.count(...WRITE_OPERATIONS);
  r.meter.reset();
  await drain([r], tasks, { concurrency: tasks, types: ['bench.wait'] });
  // Less the outcome counters' flushes (the process's, not a task's: see requestsPerTask).
  const counterWrites = r.meter.partition('STATS').requests;
  const updates = r.meter.count('UpdateItem') - counterWrites;
  const writes = (enqueueWrites + r.meter.count(...WRITE_OPERATIONS) - counterWrites) / tasks;
  r.client.destroy();
  // Claim and complete are one update each; the rest are renewals.
  return {
    writes: round(writes, 3),
    parameters: {
      tasks,
      heartbeatIntervalMs,
      handlerMs: heartbeatIntervalMs * 5.5,
      renewalsPerTask: round(updates / tasks - 2, 3),
    },
  };
}
