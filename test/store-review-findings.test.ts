/**
 * Regression tests for store bugs a correctness review found: a claim round failing part-way, a write
 * whose answer was lost, claim writes landing late or with no answer, lock timers, an idempotent task
 * re-created after its record expired, the slot partition read past one page, and the ready placement
 * of the claim lanes. Each turns a repro of the bug into assertions on the stored state, so the test
 * fails if the bug returns.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { TaskStore } from '../shared/store/task-store.js';
import { LockClient } from '../shared/locks/lock-client.js';
import { systemClock } from '../shared/clock.js';
import { ClaimState } from '../shared/store/claim-state.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { createLeasehold } from '../shared/app.js';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { localSync } from '../shared/schedules/scheduler-sync.js';
import {
  lanePartition,
  limitPartition,
  shardForId,
  shardPartition,
  slotSortKey,
} from '../shared/table-layout.js';
import type { ConfigInput } from '../shared/config.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { sequentialIds } from './support/manual-clock.js';
import { dropNextAnswer } from './support/lost-answer.js';
import { apiEvent } from './support/api-events.js';

let server: TestDynamo;
const extraClients: DynamoDBClient[] = [];

beforeAll(async () => {
  server = await startTestDynamo();
});
afterEach(() => {
  for (const c of extraClients.splice(0)) c.destroy();
});
afterAll(() => server.close());

// ---------------------------------------------------------------------------------------------------
// Helpers: fault injection by operation and key, and reads of the stored state.

type Input = {
  Key?: Record<string, unknown>;
  TableName?: string;
  IndexName?: string;
  ExpressionAttributeValues?: Record<string, unknown>;
};

const str = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : (v as { S?: string } | undefined)?.S;

/** The partition a request is about: the key's pk, or a Query's first key-condition value. */
function partitionOf(input: Input): string | undefined {
  if (input.Key) return str(input.Key.pk);
  const values = input.ExpressionAttributeValues;
  return values ? str(Object.values(values)[0]) : undefined;
}

const abortError = () =>
  Object.assign(new Error('Request aborted (deadline, injected by the test)'), { name: 'AbortError' });

interface Fault {
  /** Requests this fault hit so far. */
  readonly hits: number;
  disarm(): void;
}

/**
 * Fails matching requests of `op` (an operation name without "Command"): `before` they are sent (the
 * request never reaches DynamoDB), or `after` DynamoDB answered (it applied; the answer is lost).
 * `times` limits how many are hit; `when` lets a test arm it on a condition.
 */
function fault(
  client: DynamoDBClient,
  op: string,
  options: {
    phase: 'before' | 'after';
    match?: (partition: string | undefined, input: Input) => boolean;
    times?: number;
    when?: () => boolean;
    error?: () => Error;
  },
): Fault {
  const state = { hits: 0, armed: true };
  const applies = (commandName: string | undefined, input: Input) =>
    state.armed &&
    commandName === `${op}Command` &&
    (options.times === undefined || state.hits < options.times) &&
    (options.when?.() ?? true) &&
    (options.match?.(partitionOf(input), input) ?? true);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Input;
      if (options.phase === 'before' && applies(context.commandName, input)) {
        state.hits++;
        throw (options.error ?? abortError)();
      }
      const out = await next(args);
      if (options.phase === 'after' && applies(context.commandName, input)) {
        state.hits++;
        throw (options.error ?? abortError)();
      }
      return out;
    },
    // The step is fixed per phase; the SDK's overloads want it as a literal.
    {
      step: (options.phase === 'before' ? 'initialize' : 'deserialize') as 'deserialize',
      name: `fault${op}${Math.random()}`,
      priority: 'high',
    },
  );
  return {
    get hits() {
      return state.hits;
    },
    disarm: () => void (state.armed = false),
  };
}

/** Counts successful answers of `op` on matching partitions. */
function countAnswers(
  client: DynamoDBClient,
  op: string,
  match: (partition: string | undefined) => boolean,
): { readonly count: number } {
  const state = { count: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (context.commandName === `${op}Command` && match(partitionOf(args.input as Input))) state.count++;
      return out;
    },
    { step: 'deserialize', name: `count${op}${Math.random()}`, priority: 'low' },
  );
  return state;
}

/** Holds the first matching request of `op` before it is sent, until the test lets it go. */
function holdFirst(client: DynamoDBClient, op: string, match: (partition: string | undefined) => boolean) {
  let letGo!: () => void;
  let signalHeld!: () => void;
  const gate = new Promise<void>((r) => (letGo = r));
  const held = new Promise<void>((r) => (signalHeld = r));
  let used = false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!used && context.commandName === `${op}Command` && match(partitionOf(args.input as Input))) {
        used = true;
        signalHeld();
        await gate;
      }
      return next(args);
    },
    { step: 'initialize', name: `hold${op}${Math.random()}`, priority: 'high' },
  );
  return { held, letGo };
}

/** A store on the same table with its own DynamoDB client (so faults can be injected into it alone). */
function ownClientStore(t: TestStore, prefix: string): { store: TaskStore; client: DynamoDBClient } {
  const client = new DynamoDBClient({
    endpoint: t.config.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  extraClients.push(client);
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return {
    client,
    store: new TaskStore({ doc, config: t.config, clock: t.storeClock, newId: sequentialIds(prefix) }),
  };
}

const newStore = (overrides: ConfigInput = {}, options: { random?: () => number } = {}) =>
  createTestStore(server.endpoint, overrides, options);

async function taskItem(t: TestStore, id: string): Promise<Record<string, unknown>> {
  const out = await t.doc.send(
    new GetCommand({
      TableName: t.config.tableName,
      Key: { pk: `TASK#${id}`, sk: 'TASK' },
      ConsistentRead: true,
    }),
  );
  if (!out.Item) throw new Error(`task ${id} is not in the table`);
  return out.Item;
}

async function tasks(t: TestStore): Promise<Record<string, unknown>[]> {
  return (await t.scanAll()).filter((i) => String(i.pk).startsWith('TASK#'));
}

/** Slot items of every limit, with who holds them. */
async function slots(t: TestStore): Promise<Record<string, unknown>[]> {
  return (await t.scanAll()).filter((i) => String(i.pk).startsWith('LIMIT#'));
}

/** Slots whose lease is held at `now` (holder set, lease not run out). */
const heldSlots = (items: Record<string, unknown>[], now: number, holder?: string) =>
  items.filter(
    (s) =>
      s.holder !== undefined && Number(s.leaseUntil) >= now && (holder === undefined || s.holder === holder),
  );

const pastLease = (t: TestStore) => t.config.leaseTimeoutMs + t.config.clockSkewMs + 1;

// ---------------------------------------------------------------------------------------------------

describe('a request failing part-way through a claim round', () => {
  it('a ready-index Query failing after leases were won: the round returns them, and exactly those tasks are RUNNING under the worker', async () => {
    const t = await newStore();
    await Promise.all(
      Array.from({ length: 40 }, () => t.store.enqueue({ type: 'x', owner: 'o', maxAttempts: 1 })),
    );
    const won = countAnswers(t.client, 'UpdateItem', (pk) => pk?.startsWith('TASK#') ?? false);
    // The first shard Query after a claim write was won fails.
    const failing = fault(t.client, 'Query', {
      phase: 'before',
      match: (pk) => /^x#\d+$/.test(pk ?? ''),
      when: () => won.count > 0,
      times: 1,
    });

    const round = await t.store.claim({ workerId: 'W', types: ['x'], max: 20 });
    expect(failing.hits).toBe(1);
    expect(round.claimed.length).toBeGreaterThan(0);
    expect(round.claimed.length).toBeLessThan(20);

    const all = await tasks(t);
    const running = all.filter((i) => i.status === 'RUNNING');
    expect(running.map((i) => i.id).sort()).toEqual(round.claimed.map((c) => c.task.id).sort());
    for (const c of round.claimed) {
      const item = all.find((i) => i.id === c.task.id)!;
      expect({ owner: item.leaseOwner, token: item.leaseToken }).toEqual({
        owner: 'W',
        token: c.lease.token,
      });
    }
    expect(all.filter((i) => i.status === 'QUEUED' && i.attempts === 0)).toHaveLength(
      40 - round.claimed.length,
    );

    // The worker runs what it was given; nothing is left for recovery to FAIL unrun.
    for (const c of round.claimed) await t.store.complete({ lease: c.lease });
    t.clock.advance(pastLease(t));
    const report = await t.peer().recover();
    expect({ failed: report.failed, requeued: report.requeued }).toEqual({ failed: 0, requeued: 0 });
    expect((await tasks(t)).filter((i) => i.status === 'FAILED')).toEqual([]);
  });

  it('a slot Query (mayAdmit) failing after leases were won: the round returns them, and only their slots are held', async () => {
    const t = await newStore({ globalConcurrency: 100, typeConcurrency: { x: 50, y: 50 } });
    await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        t.store.enqueue({ type: i % 2 ? 'x' : 'y', owner: 'o', maxAttempts: 1 }),
      ),
    );
    const won = countAnswers(t.client, 'UpdateItem', (pk) => pk?.startsWith('TASK#') ?? false);
    // The other type's limit is read only when its first partition is visited: that read fails.
    const failing = fault(t.client, 'Query', {
      phase: 'before',
      match: (pk) => pk?.startsWith('LIMIT#') ?? false,
      when: () => won.count > 0,
      times: 1,
    });

    const round = await t.store.claim({ workerId: 'W', types: ['x', 'y'], max: 30 });
    expect(failing.hits).toBe(1);
    expect(round.claimed.length).toBeGreaterThan(0);
    expect(round.claimed.length).toBeLessThan(30);

    const running = (await tasks(t)).filter((i) => i.status === 'RUNNING');
    expect(running.map((i) => i.id).sort()).toEqual(round.claimed.map((c) => c.task.id).sort());
    const now = t.clock.now();
    const held = heldSlots(await slots(t), now, 'W');
    expect(
      held
        .filter((s) => s.pk === limitPartition('global'))
        .map((s) => s.taskId)
        .sort(),
    ).toEqual(round.claimed.map((c) => c.task.id).sort());
    const typed = held.filter((s) => s.pk !== limitPartition('global'));
    expect(typed.map((s) => s.taskId).sort()).toEqual(round.claimed.map((c) => c.task.id).sort());
    for (const s of typed)
      expect(s.pk).toBe(
        limitPartition(`type#${round.claimed.find((c) => c.task.id === s.taskId)!.task.type}`),
      );
  });

  it('a shard Query failing after lane (non-default priority) claims were won: the round returns the lane tasks', async () => {
    const t = await newStore();
    const high = await Promise.all(
      Array.from({ length: 5 }, () =>
        t.store.enqueue({ type: 'x', owner: 'o', priority: 4, maxAttempts: 1 }),
      ),
    );
    await Promise.all(
      Array.from({ length: 10 }, () => t.store.enqueue({ type: 'x', owner: 'o', maxAttempts: 1 })),
    );
    const failing = fault(t.client, 'Query', {
      phase: 'before',
      match: (pk) => /^x#\d+$/.test(pk ?? ''),
      times: 1,
    });
    const round = await t.store.claim({ workerId: 'W', types: ['x'], max: 10 });
    expect(failing.hits).toBe(1);
    const ids = high.map((e) => e.task.id).sort();
    expect(round.claimed.map((c) => c.task.id).sort()).toEqual(ids);
    expect(
      (await tasks(t))
        .filter((i) => i.status === 'RUNNING')
        .map((i) => i.id)
        .sort(),
    ).toEqual(ids);
  });

  it('a round that fails before winning anything throws, and leaves no task RUNNING and no slot held', async () => {
    const t = await newStore({ globalConcurrency: 10 });
    for (let i = 0; i < 10; i++) await t.store.enqueue({ type: 'x', owner: 'o', maxAttempts: 1 });
    fault(t.client, 'Query', { phase: 'before', times: 1 });
    await expect(t.store.claim({ workerId: 'W', types: ['x'], max: 5 })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect((await tasks(t)).filter((i) => i.status !== 'QUEUED')).toEqual([]);
    expect(heldSlots(await slots(t), t.clock.now())).toEqual([]);
  });

  it('a slot take that throws part-way (global slot taken, type slot write fails) gives the global slot back', async () => {
    const t = await newStore({ globalConcurrency: 1, typeConcurrency: { s: 1 } });
    const { task } = await t.store.enqueue({ type: 's', owner: 'o' });
    const typeSlotWrite = fault(t.client, 'UpdateItem', {
      phase: 'before',
      match: (pk) => pk === limitPartition('type#s'),
      error: () =>
        Object.assign(new Error('denied (injected by the test)'), { name: 'AccessDeniedException' }),
    });
    await expect(t.store.claim({ workerId: 'W', types: ['s'], max: 1 })).rejects.toMatchObject({
      name: 'AccessDeniedException',
    });
    expect(typeSlotWrite.hits).toBeGreaterThan(0);
    typeSlotWrite.disarm();

    const globalSlot = (await slots(t)).find((s) => s.pk === limitPartition('global'));
    expect(globalSlot).toBeDefined(); // it was taken...
    expect(globalSlot!.holder).toBeUndefined(); // ...and given back
    expect(globalSlot!.taskId).toBeUndefined();
    expect(await taskItem(t, task.id)).toMatchObject({ status: 'QUEUED', attempts: 0 });

    // The limit of 1 is free at once (not after a lease): another worker claims the task now.
    const next = await t.peer().claim({ workerId: 'C', types: ['s'], max: 1 });
    expect(next.claimed.map((c) => c.task.id)).toEqual([task.id]);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('a write that applied but whose answer was lost', () => {
  it.each(['network', 'deadline'] as const)(
    'enqueue without idempotency key, answer lost (%s): created, one task, no error',
    async (as) => {
      const t = await newStore();
      const dropped = dropNextAnswer(t.client, 'PutItem', as);
      const result = await t.store.enqueue({ type: 'x', owner: 'o', payload: 'once' });
      expect(dropped.dropped).toBe(1);
      expect(result.created).toBe(true);
      const all = await tasks(t);
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ id: result.task.id, status: 'QUEUED', payload: JSON.stringify('once') });
    },
  );

  it('POST /tasks whose PutItem answer is lost answers 201 with the one task it created', async () => {
    const t = await newStore();
    const app = createLeasehold(t.config, taskDefinitions, { doc: t.doc, schedulerSync: localSync });
    const logger = new Logger({ serviceName: 'review-findings', logLevel: 'SILENT' });
    dropNextAnswer(t.client, 'PutItem', 'network');
    const response = await handleApiEvent(
      apiEvent({ method: 'POST', path: '/tasks', body: { type: 'demo.echo', payload: 'once' } }),
      { ...app, logger },
    );
    expect(response.statusCode).toBe(201);
    const id = (JSON.parse(String(response.body)) as { task: { id: string } }).task.id;
    expect((await tasks(t)).map((i) => i.id)).toEqual([id]);
  });

  it.each(['network', 'deadline'] as const)(
    'cancel and redrive whose UpdateItem answer is lost (%s) succeed (not 409)',
    async (as) => {
      const t = await newStore();
      const { task } = await t.store.enqueue({ type: 'x', owner: 'o' });
      dropNextAnswer(t.client, 'UpdateItem', as);
      const cancelled = await t.store.requestCancel({ id: task.id, owner: 'o' });
      expect(cancelled.status).toBe('CANCELLED');
      expect(await taskItem(t, task.id)).toMatchObject({ status: 'CANCELLED' });

      dropNextAnswer(t.client, 'UpdateItem', as);
      const redriven = await t.store.retry({ id: task.id, owner: 'o' });
      expect(redriven.status).toBe('QUEUED');
      expect(await taskItem(t, task.id)).toMatchObject({ status: 'QUEUED', attempts: 0 });

      // And a running task's cancel request, answer lost: CANCEL_REQUESTED, not a conflict.
      const { claimed } = await t.store.claim({ workerId: 'W', types: ['x'], max: 1 });
      expect(claimed).toHaveLength(1);
      dropNextAnswer(t.client, 'UpdateItem', as);
      expect((await t.store.requestCancel({ id: task.id, owner: 'o' })).status).toBe('CANCEL_REQUESTED');
    },
  );
});

// ---------------------------------------------------------------------------------------------------

describe('a claim write that lands after its lease (nearly) ran out', () => {
  it('global limit 1: the stalled claimer starts nothing, only the newer holder runs, and the stale task is QUEUED with its attempt given back', async () => {
    const t = await newStore({ globalConcurrency: 1 });
    const W = ownClientStore(t, 'w');
    const stall = holdFirst(W.client, 'UpdateItem', (pk) => pk?.startsWith('TASK#') ?? false);
    const C = t.peer();
    const a = (await t.store.enqueue({ type: 'a', owner: 'o' })).task;
    const b = (await t.store.enqueue({ type: 'b', owner: 'o' })).task;

    const wRound = W.store.claim({ workerId: 'W', types: ['a'], max: 1 });
    await stall.held; // W took the only slot; its claim write for a is stalled
    expect(heldSlots(await slots(t), t.clock.now(), 'W')).toHaveLength(1);
    t.clock.advance(pastLease(t));
    const c = await C.claim({ workerId: 'C', types: ['b'], max: 1 });
    expect(c.claimed.map((x) => x.task.id)).toEqual([b.id]);
    const started = new Set(c.claimed.map((x) => x.task.id));

    stall.letGo();
    const w = await wRound;
    for (const x of w.claimed) started.add(x.task.id);
    expect(w.claimed).toEqual([]); // nothing won for task a
    expect([...started]).toEqual([b.id]); // never two tasks started under limit 1

    const all = await tasks(t);
    expect(all.filter((i) => i.status === 'RUNNING').map((i) => `${i.id} by ${i.leaseOwner}`)).toEqual([
      `${b.id} by C`,
    ]);
    const aItem = all.find((i) => i.id === a.id)!;
    expect(aItem).toMatchObject({ status: 'QUEUED', attempts: 0 });
    expect(aItem.leaseOwner).toBeUndefined();
    expect(aItem.readyPk).toBe(shardPartition('a', shardForId(a.id)));
    // The slot stays with the newer holder.
    expect(heldSlots(await slots(t), t.clock.now()).map((s) => `${s.holder} ${s.taskId}`)).toEqual([
      `C ${b.id}`,
    ]);

    // Recovery right away has nothing to requeue; the newer holder's work is untouched.
    const report = await t.peer().recover();
    expect(report.requeued).toBe(0);
    expect(await taskItem(t, a.id)).toMatchObject({ status: 'QUEUED', attempts: 0 });
    await C.complete({ lease: c.claimed[0]!.lease });
    // Task a runs next, with a fresh first attempt.
    const again = await C.claim({ workerId: 'C', types: ['a'], max: 1 });
    expect(again.claimed.map((x) => [x.task.id, x.lease.attempts])).toEqual([[a.id, 1]]);
  });

  it('a claim write landing with no more than the skew margin of its lease left is given back, not started', async () => {
    const t = await newStore({ globalConcurrency: 1 });
    const W = ownClientStore(t, 'w');
    const stall = holdFirst(W.client, 'UpdateItem', (pk) => pk?.startsWith('TASK#') ?? false);
    const a = (await t.store.enqueue({ type: 'a', owner: 'o', priority: 3 })).task;
    const before = await taskItem(t, a.id);

    const wRound = W.store.claim({ workerId: 'W', types: ['a'], max: 1 });
    await stall.held;
    t.clock.advance(t.config.leaseTimeoutMs - t.config.clockSkewMs); // exactly the skew margin left
    stall.letGo();
    expect((await wRound).claimed).toEqual([]);

    const after = await taskItem(t, a.id);
    expect(after).toMatchObject({
      status: 'QUEUED',
      attempts: 0,
      readyPk: before.readyPk,
      readySk: before.readySk,
    });
    expect(Number(after.leaseToken)).toBeGreaterThan(Number(before.leaseToken)); // the token never goes back
    expect(heldSlots(await slots(t), t.clock.now())).toEqual([]); // the slot was given back too
    const next = await t.peer().claim({ workerId: 'C', types: ['a'], max: 1 });
    expect(next.claimed.map((x) => x.task.id)).toEqual([a.id]);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('a claim write whose answers and read-back all fail', () => {
  it.each([0, 7])(
    'the claim is undone: QUEUED at its old place, attempt given back, slot freed (priority %i)',
    async (priority) => {
      const t = await newStore({ globalConcurrency: 1 });
      const { task } = await t.store.enqueue({ type: 'x', owner: 'o', maxAttempts: 1, priority });
      const before = await taskItem(t, task.id);
      // Both sends of the claim write apply (the second is refused by the first) and lose their answers;
      // every read-back fails. The undo write then goes through.
      const claimAnswers = fault(t.client, 'UpdateItem', {
        phase: 'after',
        match: (pk) => pk === `TASK#${task.id}`,
        times: 2,
      });
      const reads = fault(t.client, 'GetItem', { phase: 'before' });

      await expect(t.store.claim({ workerId: 'W', types: ['x'], max: 1 })).rejects.toMatchObject({
        name: 'WriteOutcomeUnknownError',
      });
      expect(claimAnswers.hits).toBe(2);
      expect(reads.hits).toBeGreaterThan(0);
      reads.disarm();

      const after = await taskItem(t, task.id);
      expect(after).toMatchObject({
        status: 'QUEUED',
        attempts: 0,
        readyPk: before.readyPk,
        readySk: before.readySk,
      });
      expect(after.readyPk).toBe(
        priority === 0 ? shardPartition('x', shardForId(task.id)) : lanePartition('x'),
      );
      expect(after.leaseOwner).toBeUndefined();
      expect(after.sweepPk).toBeUndefined();
      expect(after.delayPk).toBeUndefined();
      expect(heldSlots(await slots(t), t.clock.now())).toEqual([]);

      // Nothing for recovery to FAIL later, and the task runs on its first attempt.
      t.clock.advance(pastLease(t));
      expect((await t.peer().recover()).failed).toBe(0);
      const next = await t.peer().claim({ workerId: 'C', types: ['x'], max: 1 });
      expect(next.claimed.map((c) => [c.task.id, c.lease.attempts])).toEqual([[task.id, 1]]);
    },
  );

  it('a claim write that never reached DynamoDB, read-back failing: the claim throws and the task is untouched', async () => {
    const t = await newStore({ globalConcurrency: 1 });
    const { task } = await t.store.enqueue({ type: 'x', owner: 'o', maxAttempts: 1 });
    const before = await taskItem(t, task.id);
    const sends = fault(t.client, 'UpdateItem', {
      phase: 'before',
      match: (pk) => pk === `TASK#${task.id}`,
      times: 2,
    });
    const reads = fault(t.client, 'GetItem', { phase: 'before' });
    await expect(t.store.claim({ workerId: 'W', types: ['x'], max: 1 })).rejects.toMatchObject({
      name: 'WriteOutcomeUnknownError',
    });
    expect(sends.hits).toBe(2);
    reads.disarm();
    expect(await taskItem(t, task.id)).toEqual(before);
    expect(heldSlots(await slots(t), t.clock.now())).toEqual([]);
  });

  it('when the undo fails too, recovery requeues the task later (attempts left): nothing worse', async () => {
    const t = await newStore();
    const { task } = await t.store.enqueue({ type: 'x', owner: 'o', maxAttempts: 3 });
    const first = fault(t.client, 'UpdateItem', {
      phase: 'after',
      match: (pk) => pk === `TASK#${task.id}`,
      times: 1,
    });
    const rest = fault(t.client, 'UpdateItem', {
      phase: 'before',
      match: (pk) => pk === `TASK#${task.id}`,
      when: () => first.hits > 0,
    });
    const reads = fault(t.client, 'GetItem', { phase: 'before' });
    await expect(t.store.claim({ workerId: 'W', types: ['x'], max: 1 })).rejects.toMatchObject({
      name: 'WriteOutcomeUnknownError',
    });
    expect(rest.hits).toBeGreaterThan(1); // the resend and the undo were tried
    rest.disarm();
    reads.disarm();

    t.clock.advance(pastLease(t));
    const report = await t.peer().recover();
    expect({ requeued: report.requeued, failed: report.failed }).toEqual({ requeued: 1, failed: 0 });
    expect(await taskItem(t, task.id)).toMatchObject({ status: 'QUEUED', attempts: 1 });
    const next = await t.peer().claim({ workerId: 'C', types: ['x'], max: 1 });
    expect(next.claimed.map((c) => c.task.id)).toEqual([task.id]);
  });

  it("when the undo fails too, the worker's next round undoes it: a task on its last attempt runs, never FAILED without having run", async () => {
    const t = await newStore();
    const { task } = await t.store.enqueue({ type: 'x', owner: 'o', maxAttempts: 1 });
    const first = fault(t.client, 'UpdateItem', {
      phase: 'after',
      match: (pk) => pk === `TASK#${task.id}`,
      times: 1,
    });
    const rest = fault(t.client, 'UpdateItem', {
      phase: 'before',
      match: (pk) => pk === `TASK#${task.id}`,
      when: () => first.hits > 0,
    });
    const reads = fault(t.client, 'GetItem', { phase: 'before' });
    // The worker's claim memory, kept between its rounds.
    const memory = new ClaimState();
    await expect(t.store.claim({ workerId: 'W', types: ['x'], max: 1 }, memory)).rejects.toMatchObject({
      name: 'WriteOutcomeUnknownError',
    });
    rest.disarm();
    reads.disarm();
    expect(await taskItem(t, task.id)).toMatchObject({ status: 'RUNNING', attempts: 1 });

    // The next round first undoes the claim it never learned the outcome of, then claims the task afresh.
    const next = await t.store.claim({ workerId: 'W', types: ['x'], max: 1 }, memory);
    expect(next.claimed.map((c) => c.task.id)).toEqual([task.id]);
    expect(next.claimed[0]!.lease.attempts).toBe(1);
    await t.store.complete({ lease: next.claimed[0]!.lease });
    t.clock.advance(pastLease(t));
    await t.peer().recover();
    expect(await taskItem(t, task.id)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });
});

// ---------------------------------------------------------------------------------------------------

/** Records the timers lock-client.ts arms, and whether each was cleared or fired. */
function trackLockTimers() {
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const timers = new Map<NodeJS.Timeout, { state: 'armed' | 'fired' | 'cleared' }>();
  globalThis.setTimeout = ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    if (!new Error().stack?.includes('lock-client')) return realSet(fn, ms, ...args);
    const record = { state: 'armed' as 'armed' | 'fired' | 'cleared' };
    const handle = realSet(() => {
      record.state = 'fired';
      fn(...args);
    }, ms);
    timers.set(handle, record);
    return handle;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((handle?: NodeJS.Timeout) => {
    const record = handle && timers.get(handle);
    if (record && record.state === 'armed') record.state = 'cleared';
    realClear(handle);
  }) as typeof clearTimeout;
  return {
    armed: () => [...timers].filter(([, r]) => r.state === 'armed').map(([h]) => h),
    /** The lock's pending timers that would keep the process alive. Counted from the lock's own timers only:
     * a count of the whole process's Timeouts also sees the SDK's and the runner's, and flaked. */
    refedPending: () => [...timers].filter(([h, r]) => r.state === 'armed' && h.hasRef()).map(([h]) => h),
    all: () => [...timers.keys()],
    restore: () => {
      globalThis.setTimeout = realSet;
      globalThis.clearTimeout = realClear;
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('lock timers', () => {
  it.each(['while release() is in flight', 'after release() resolved'] as const)(
    'a renewal whose answer arrives %s arms no timer, and no UpdateItem is sent after release() resolved',
    async (when) => {
      const t = await newStore();
      const client = new DynamoDBClient({
        endpoint: t.config.dynamodbEndpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
      extraClients.push(client);
      // The n-th UpdateItem's answer waits for gate n (acquire is #0, the first renewal #1, release #2).
      let updates = 0;
      const sent: (() => void)[] = [];
      const sentNow = (n: number) => new Promise<void>((r) => (sent[n] = r));
      const gates = new Map<number, Promise<void>>();
      const open = new Map<number, () => void>();
      for (const n of [1, 2]) gates.set(n, new Promise<void>((r) => open.set(n, r)));
      const renewalSent = sentNow(1);
      const releaseSent = sentNow(2);
      client.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName !== 'UpdateItemCommand') return next(args);
          const n = updates++;
          sent[n]?.();
          const out = await next(args);
          await gates.get(n);
          return out;
        },
        { step: 'deserialize', name: 'gateAnswers', priority: 'high' },
      );
      const timers = trackLockTimers();
      try {
        const locks = new LockClient({
          doc: DynamoDBDocumentClient.from(client),
          config: t.config,
          clock: systemClock(),
        });
        const leaseMs = 300;
        const lock = await locks.acquire('k', { leaseMs, mode: 'auto-renew' });
        await renewalSent; // at lease/3, its answer held
        const released = lock.release();
        await releaseSent;
        if (when === 'while release() is in flight') {
          open.get(1)!();
          await sleep(20);
          open.get(2)!();
          expect(await released).toBe(true);
        } else {
          open.get(2)!();
          expect(await released).toBe(true);
          open.get(1)!();
          await sleep(20);
        }
        expect(lock.signal.aborted).toBe(true);
        expect(timers.armed()).toEqual([]);
        expect(timers.refedPending()).toEqual([]);
        const after = updates;
        await sleep(leaseMs); // past any renewal a leaked timer would fire
        expect(updates - after).toBe(0);
        expect(timers.all().length).toBeGreaterThan(0);
        expect(timers.all().every((h) => !h.hasRef())).toBe(true);
      } finally {
        timers.restore();
      }
    },
  );

  it('a fixed-mode lock arms only unref’d timers: it does not keep the process alive', async () => {
    const t = await newStore();
    const timers = trackLockTimers();
    try {
      const locks = new LockClient({ doc: t.doc, config: t.config, clock: systemClock() });
      const lock = await locks.acquire('fixed', { leaseMs: 3_600_000, mode: 'fixed' });
      expect(timers.armed()).toHaveLength(1); // the expiry timer
      expect(timers.armed()[0]!.hasRef()).toBe(false);
      expect(timers.refedPending()).toEqual([]);
      expect(await lock.release()).toBe(true);
      expect(timers.armed()).toEqual([]);
    } finally {
      timers.restore();
    }
  });
});

// ---------------------------------------------------------------------------------------------------

describe('an idempotent task re-created after its record expired', () => {
  const DAY = 86_400_000;

  /** The first incarnation: claimed three times (two releases, then complete); returns its highest token. */
  async function firstIncarnation(t: TestStore) {
    const first = await t.store.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'invoice-42', payload: 1 });
    const tokens: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { claimed } = await t.store.claim({ workerId: 'w', types: ['x'], max: 1 });
      expect(claimed.map((c) => c.task.id)).toEqual([first.task.id]);
      tokens.push(claimed[0]!.lease.token);
      if (i < 2) await t.store.release({ lease: claimed[0]!.lease });
      else await t.store.complete({ lease: claimed[0]!.lease });
    }
    const done = await taskItem(t, first.task.id);
    expect(done.status).toBe('SUCCESS');
    expect(done.expiresAt).toBeTypeOf('number');
    return {
      id: first.task.id,
      maxToken: Math.max(...tokens, Number(done.leaseToken)),
      expiresAtMs: Number(done.expiresAt) * 1000,
    };
  }

  it('record past its expiresAt but not yet deleted (TTL lags): a new task, whose tokens are larger than every earlier one', async () => {
    const t = await newStore();
    const old = await firstIncarnation(t);
    t.clock.set(old.expiresAtMs + 1_000);
    const again = await t.store.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'invoice-42', payload: 2 });
    expect(again.created).toBe(true);
    expect(again.task.id).toBe(old.id);
    expect(again.task).toMatchObject({ status: 'QUEUED', attempts: 0 });
    expect(await taskItem(t, old.id)).toMatchObject({ status: 'QUEUED', payload: JSON.stringify(2) });
    const { claimed } = await t.store.claim({ workerId: 'w', types: ['x'], max: 1 });
    expect(claimed).toHaveLength(1);
    expect(claimed[0]!.lease.token).toBeGreaterThan(old.maxToken);
    // The same key again within the new window: the new task, not a third one.
    const repeat = await t.store.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'invoice-42', payload: 2 });
    expect(repeat.created).toBe(false);
  });

  it('the same body re-enqueued past expiresAt is a new task too', async () => {
    const t = await newStore();
    const old = await firstIncarnation(t);
    t.clock.set(old.expiresAtMs + 1_000);
    const again = await t.store.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'invoice-42', payload: 1 });
    expect(again.created).toBe(true);
    const { claimed } = await t.store.claim({ workerId: 'w', types: ['x'], max: 1 });
    expect(claimed[0]!.lease.token).toBeGreaterThan(old.maxToken);
  });

  it('record deleted by TTL (simulated with DeleteItem once expired): the new task’s tokens are larger than the old ones', async () => {
    const t = await newStore();
    const old = await firstIncarnation(t);
    // TTL deletes only after expiresAt (typically within days of it).
    t.clock.set(old.expiresAtMs + 2 * DAY);
    await t.doc.send(
      new DeleteCommand({ TableName: t.config.tableName, Key: { pk: `TASK#${old.id}`, sk: 'TASK' } }),
    );
    const again = await t.store.enqueue({ type: 'x', owner: 'o', idempotencyKey: 'invoice-42', payload: 2 });
    expect(again.created).toBe(true);
    expect(again.task.id).toBe(old.id);
    const tokens: number[] = [];
    for (let i = 0; i < 2; i++) {
      const { claimed } = await t.store.claim({ workerId: 'w', types: ['x'], max: 1 });
      tokens.push(claimed[0]!.lease.token);
      await t.store.release({ lease: claimed[0]!.lease });
    }
    expect(Math.min(...tokens)).toBeGreaterThan(old.maxToken);
    expect(tokens[1]).toBeGreaterThan(tokens[0]!);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('the slot partition is read past one page', () => {
  it('slots on a later page of a >1 MB limit partition are seen and taken, and the limit holds', async () => {
    const limit = 30;
    const t = await newStore({ globalConcurrency: limit });
    const pk = limitPartition('global');
    const padding = 'p'.repeat(40_000); // 30 slots of ~40 KB: over the 1 MB page of one Query
    const future = t.clock.now() + 10 * 86_400_000;
    const freeIndex = limit - 1; // the last slot, on the last page: released (no holder)
    const items = Array.from({ length: limit }, (_, i) =>
      i === freeIndex
        ? { pk, sk: slotSortKey(i), slotToken: 7, padding }
        : {
            pk,
            sk: slotSortKey(i),
            slotToken: 1,
            holder: 'other',
            leaseUntil: future,
            taskId: `busy-${i}`,
            padding,
          },
    );
    for (let i = 0; i < items.length; i += 10) {
      await t.doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [t.config.tableName]: items.slice(i, i + 10).map((Item) => ({ PutRequest: { Item } })),
          },
        }),
      );
    }
    // The backend does page this partition (else the test would prove nothing).
    const firstPage = await t.doc.send(
      new QueryCommand({
        TableName: t.config.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
      }),
    );
    expect(firstPage.LastEvaluatedKey).toBeDefined();
    expect(firstPage.Items!.some((i) => i.sk === slotSortKey(freeIndex))).toBe(false);

    await Promise.all(Array.from({ length: 5 }, () => t.store.enqueue({ type: 'x', owner: 'o' })));
    const round = await t.store.claim({ workerId: 'W', types: ['x'], max: 5 });
    expect(round.claimed).toHaveLength(1);
    const slot = (await slots(t)).find((s) => s.sk === slotSortKey(freeIndex))!;
    expect(slot).toMatchObject({ holder: 'W', slotToken: 8, taskId: round.claimed[0]!.task.id });
    expect(round.claimed[0]!.lease.slots).toEqual([
      expect.objectContaining({ scope: 'global', index: freeIndex, token: 8 }),
    ]);

    // The limit holds: every slot is taken now, so nobody claims more.
    t.clock.advance(t.config.pollIntervalMs + 1);
    const more = await t.peer().claim({ workerId: 'C', types: ['x'], max: 5 });
    expect(more.claimed).toEqual([]);
    expect((await tasks(t)).filter((i) => i.status === 'RUNNING')).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('claim lanes: where a requeued task waits', () => {
  const TYPE = 'laned';
  const expectedPartition = (id: string, priority: number) =>
    priority === 0 ? shardPartition(TYPE, shardForId(id)) : lanePartition(TYPE);

  it.each([5, -3, 0])(
    'priority %i: enqueue, release, recovery requeue, retry promotion and redrive all put it in its partition',
    async (priority) => {
      const t = await newStore({ backoffBaseMs: 1_000, backoffMaxMs: 1_000 });
      const { task } = await t.store.enqueue({ type: TYPE, owner: 'o', priority, maxAttempts: 3 });
      const where = expectedPartition(task.id, priority);
      const readyPkNow = async () => (await taskItem(t, task.id)).readyPk;
      const claimIt = async (worker: string) => {
        t.clock.advance(t.config.pollIntervalMs + 1);
        const { claimed } = await t.peer().claim({ workerId: worker, types: [TYPE], max: 1 });
        expect(claimed.map((c) => c.task.id)).toEqual([task.id]);
        expect(await readyPkNow()).toBeUndefined();
        return claimed[0]!.lease;
      };
      expect(await readyPkNow()).toBe(where);

      // release
      let lease = await claimIt('w1');
      await t.store.release({ lease });
      expect(await readyPkNow()).toBe(where);

      // recovery requeue
      lease = await claimIt('w2');
      t.clock.advance(pastLease(t));
      expect((await t.peer().recover()).requeued).toBe(1);
      expect(await readyPkNow()).toBe(where);

      // a retryable failure waits in the delay index, then promotion moves it back
      lease = await claimIt('w3');
      await t.store.fail({ lease, error: 'boom', retryable: true });
      const delayed = await taskItem(t, task.id);
      expect(delayed.readyPk).toBeUndefined();
      expect(delayed.dueReadyPk).toBe(where);
      t.clock.advance(2_000);
      expect(await t.store.promote({ id: task.id })).toBe(true);
      expect(await readyPkNow()).toBe(where);

      // redrive of a FAILED task
      lease = await claimIt('w4');
      await t.store.fail({ lease, error: 'fatal', retryable: false });
      expect(await taskItem(t, task.id)).toMatchObject({ status: 'FAILED' });
      await t.store.retry({ id: task.id, owner: 'o' });
      expect(await readyPkNow()).toBe(where);
      await claimIt('w5');
    },
  );

  it('a delayed task promoted by the recovery sweep lands in its partition too', async () => {
    const t = await newStore();
    const lane = (await t.store.enqueue({ type: TYPE, owner: 'o', priority: 9, delayMs: 5_000 })).task;
    const shard = (await t.store.enqueue({ type: TYPE, owner: 'o', delayMs: 5_000 })).task;
    t.clock.advance(6_000);
    expect((await t.peer().recover()).promoted).toBe(2);
    expect((await taskItem(t, lane.id)).readyPk).toBe(lanePartition(TYPE));
    expect((await taskItem(t, shard.id)).readyPk).toBe(shardPartition(TYPE, shardForId(shard.id)));
  });
});
