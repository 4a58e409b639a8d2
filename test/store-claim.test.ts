import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskStore } from '../shared/store/task-store.js';
import { ClaimState } from '../shared/store/claim-state.js';
import { LeaseLostError } from '../shared/errors.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { idsInShard } from './support/shard-ids.js';
import { shardForId } from '../shared/table-layout.js';
import { dropNextAnswer } from './support/lost-answer.js';
import { TUNING } from '../shared/tuning.js';

let server: TestDynamo;
let t: TestStore;

beforeAll(async () => {
  server = await startTestDynamo();
  t = await createTestStore(server.endpoint);
});
afterAll(() => server.close());

describe('claim (SKIP LOCKED)', () => {
  it(
    '32 claimers racing over 300 tasks claim every task exactly once and skip none',
    { timeout: 120_000 },
    async () => {
      const type = 'race';
      for (let i = 0; i < 300; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            t.store.enqueue({ type, owner: 'racer', payload: { n: i + j } }),
          ),
        );
      }
      const claims = new Map<string, string[]>();
      let lostRaces = 0;
      let claimCalls = 0;
      // Each claimer is a worker: its own store client and its own claim memory.
      const claimers = Array.from({ length: 32 }, (_, w) => ({
        id: `claimer-${w}`,
        store: t.peer({ random: Math.random }),
        memory: new ClaimState(),
      }));
      await Promise.all(
        claimers.map(async ({ id, store, memory }) => {
          for (let idle = 0; idle < 3;) {
            const round = await store.claim({ workerId: id, types: [type], max: 4 }, memory);
            claimCalls++;
            lostRaces += round.lostRaces;
            if (round.claimed.length === 0) idle++;
            for (const c of round.claimed) {
              claims.set(c.task.id, [...(claims.get(c.task.id) ?? []), id]);
              await store.complete({ lease: c.lease });
            }
          }
        }),
      );
      expect(claims.size).toBe(300);
      expect([...claims.values()].filter((holders) => holders.length !== 1)).toEqual([]);
      const tasks = (await t.scanAll()).filter((i) => i.type === type);
      expect(tasks).toHaveLength(300);
      expect(tasks.every((i) => i.status === 'SUCCESS' && i.leaseToken === 1 && i.attempts === 1)).toBe(true);
      console.info(
        `32 claimers / 300 tasks: ${lostRaces} lost conditional writes (${(lostRaces / 300).toFixed(3)} per claim), ${claimCalls} claim rounds`,
      );
    },
  );

  it('takes heads in priority, then due time, then age order within a shard', async () => {
    const shard = 3;
    const s = await createTestStore(server.endpoint);
    const store = new TaskStore({ doc: s.doc, config: s.config, clock: s.clock, newId: idsInShard(shard) });
    const now = s.clock.now();
    const enq = (name: string, priority: number, availableAt?: number) =>
      store
        .enqueue({
          type: 'ordered',
          owner: 'o',
          payload: name,
          priority,
          ...(availableAt === undefined ? {} : { availableAt }),
        })
        .then((r) => r.task.id);
    const names = new Map<string, string>();
    for (const [name, priority, at] of [
      ['low-old', -5, now - 3000],
      ['mid-late', 0, now - 1000],
      ['mid-early', 0, now - 2000],
      ['high', 7, now],
      ['mid-early-younger', 0, now - 2000],
    ] as const) {
      s.clock.advance(1);
      names.set(await enq(name, priority, at), name);
    }
    const drainOrder = async (workerId: string, memory: ClaimState) => {
      const order: string[] = [];
      for (;;) {
        const { claimed } = await store.claim({ workerId, types: ['ordered'], max: 1 }, memory);
        if (claimed.length === 0) break;
        order.push(names.get(claimed[0]!.task.id)!);
      }
      return order;
    };
    // A worker starts out contended (it may be one of a wave): it picks at random among equal
    // priorities, but a higher priority always comes first.
    const first = await store.claim({ workerId: 'fresh', types: ['ordered'], max: 1 });
    expect(names.get(first.claimed[0]!.task.id)).toBe('high');
    await store.release({ lease: first.claimed[0]!.lease });
    // Eight rounds without a lost race make a worker uncontended: it then takes heads strictly in order.
    // The worker's claim memory carries that across its rounds.
    const solo = new ClaimState();
    for (let i = 0; i < 8; i++) await store.claim({ workerId: 'solo', types: ['other'], max: 1 }, solo);
    expect(await drainOrder('solo', solo)).toEqual([
      'high',
      'mid-early',
      'mid-early-younger',
      'mid-late',
      'low-old',
    ]);
  });

  it('a contended worker still takes a higher priority first', async () => {
    const s = await createTestStore(server.endpoint);
    const store = new TaskStore({ doc: s.doc, config: s.config, clock: s.clock, newId: idsInShard(5) });
    for (let i = 0; i < 20; i++) await store.enqueue({ type: 'mixed', owner: 'o', payload: i, priority: 0 });
    const urgent = (await store.enqueue({ type: 'mixed', owner: 'o', payload: 'urgent', priority: 9 })).task
      .id;
    for (let w = 0; w < 5; w++) {
      const { claimed } = await store.claim({ workerId: `fresh-${w}`, types: ['mixed'], max: 1 });
      if (w === 0) expect(claimed[0]!.task.id).toBe(urgent);
      else expect(claimed[0]!.task.id).not.toBe(urgent);
    }
  });

  it('a delayed high-priority task never blocks due lower-priority ones, and runs once it is due', async () => {
    const s = await createTestStore(server.endpoint);
    const delayed = (await s.store.enqueue({ type: 'mixed', owner: 'o', priority: 1000, delayMs: 60_000 }))
      .task;
    for (let i = 0; i < 3; i++) await s.store.enqueue({ type: 'mixed', owner: 'o', priority: -1000 });
    const first = await s.store.claim({ workerId: 'w', types: ['mixed'], max: 10 });
    expect(first.claimed.map((c) => c.task.priority)).toEqual([-1000, -1000, -1000]);

    s.clock.advance(60_000);
    expect((await s.store.recover()).promoted).toBe(1);
    const second = await s.store.claim({ workerId: 'w', types: ['mixed'], max: 10 });
    expect(second.claimed.map((c) => c.task.id)).toEqual([delayed.id]);
  });

  it('claims only the types asked for, and never a task that is not yet due', async () => {
    const s = await createTestStore(server.endpoint);
    await s.store.enqueue({ type: 'a', owner: 'o' });
    await s.store.enqueue({ type: 'b', owner: 'o' });
    await s.store.enqueue({ type: 'a', owner: 'o', delayMs: 1 });
    const got = await s.store.claim({ workerId: 'w', types: ['a'], max: 10 });
    expect(got.claimed.map((c) => c.task.type)).toEqual(['a']);
  });

  it('a claim whose answer was lost is still ours: the retry fails its condition, the read-back finds our write', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'lost-claim', owner: 'o' });
    const fault = dropNextAnswer(s.client, 'UpdateItem');
    const { claimed, lostRaces } = await s.store.claim({ workerId: 'w', types: ['lost-claim'], max: 1 });
    expect(fault.dropped).toBe(1);
    expect(lostRaces).toBe(0);
    expect(claimed.map((c) => c.task.id)).toEqual([task.id]);
    expect(claimed[0]!.task.leaseToken).toBe(1);
  });
});

describe('a claim round woken by a hint', () => {
  it('reads the hinted partition (beside the lane), claims its head and returns at once; the next round reads on', async () => {
    const own = await createTestStore(server.endpoint);
    const { task } = await own.store.enqueue({ type: 'hinted', owner: 'o', payload: {} });
    const memory = new ClaimState();
    // Calm (no random order), as a worker is after a few quiet rounds; told where the task went.
    for (let i = 0; i < 8; i++) memory.noteRound(0, () => 0.5);
    memory.lookFirst('hinted', shardForId(task.id));
    const sent = requestLog(own);
    const round = await own.store.claim({ workerId: 'w1', types: ['hinted'], max: 8 }, memory);
    expect(round.claimed.map((c) => c.task.id)).toEqual([task.id]);
    // The hinted partition's read and the lane's (read beside it), the claim, and nothing else: the
    // task starts now, not after the round has read the other 15 shards for the 7 free slots left.
    expect(sent.filter((r) => r.startsWith('QueryCommand')).sort()).toEqual(
      [`QueryCommand hinted#${shardForId(task.id)}`, 'QueryCommand hinted#lane'].sort(),
    );
    expect(sent.filter((r) => r.startsWith('UpdateItemCommand'))).toHaveLength(1);
    // The worker's next round (no hint now) reads on for the room left.
    sent.length = 0;
    const next = await own.store.claim({ workerId: 'w1', types: ['hinted'], max: 7 }, memory);
    expect(next.claimed).toEqual([]);
    expect(sent.filter((r) => /^QueryCommand hinted#\d+$/.test(r)).length).toBeGreaterThanOrEqual(15);
  });
});

describe('placed workers, more places than partitions (a fleet seat of the cap)', () => {
  it('take their own heads at once and leave the others to their place until their turn in line', async () => {
    const own = await createTestStore(server.endpoint);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++)
      ids.push((await own.store.enqueue({ type: 'placed', owner: 'o', payload: { i } })).task.id);
    const memory = new ClaimState();
    memory.placeAt({ index: 0, of: 32 }); // half of shard 0's heads
    const isMine = (id: string) =>
      memory.ownsHead({ id, type: 'placed', shard: shardForId(id), readySk: '' }, ['placed']);
    const mine = ids.filter(isMine).sort();
    const theirs = ids.filter((id) => !isMine(id)).sort();
    expect(theirs.length).toBeGreaterThan(0);
    const claim = async () =>
      (await own.store.claim({ workerId: 'w0', types: ['placed'], max: 16 }, memory)).claimed.map(
        (c) => c.task.id,
      );
    expect((await claim()).sort()).toEqual(mine);
    expect(memory.othersDueAt).toBeGreaterThanOrEqual(own.clock.now() + TUNING.claim.othersHeadStepMs);
    own.clock.advance(TUNING.claim.othersHeadStepMs - 1);
    expect(await claim()).toEqual([]);
    // Their places' workers took none of them meanwhile (busy, or gone): past the last turn, this one takes them.
    own.clock.advance(TUNING.claim.othersHeadMaxSteps * TUNING.claim.othersHeadStepMs);
    expect((await claim()).sort()).toEqual(theirs);
  });

  it('a round answering a ring takes other places heads at once', async () => {
    const own = await createTestStore(server.endpoint);
    // A task outside shard 0 (place 0 of 32 owns half of shard 0).
    let task = (await own.store.enqueue({ type: 'rung', owner: 'o', payload: {} })).task;
    while (shardForId(task.id) === 0)
      task = (await own.store.enqueue({ type: 'rung', owner: 'o', payload: {} })).task;
    const memory = new ClaimState();
    memory.placeAt({ index: 0, of: 32 });
    const claim = async () =>
      (await own.store.claim({ workerId: 'w0', types: ['rung'], max: 4 }, memory)).claimed.map(
        (c) => c.task.id,
      );
    expect(await claim()).toEqual([]);
    memory.takeEveryHeadNextRound();
    expect(await claim()).toEqual([task.id]);
  });
});

describe('a claim round handed a task by key', () => {
  it('claims it with one write and no ready read (the lane only), marks the round handedOnly, and leaves a stale key to lose its write', async () => {
    const own = await createTestStore(server.endpoint);
    const enqueued: { taskId: string; readySk?: string }[] = [];
    own.store.events.on('task:enqueued', (e) => void enqueued.push(e));
    const { task } = await own.store.enqueue({ type: 'keyed', owner: 'o', payload: {} });
    const { readySk } = enqueued[0]!;
    expect(readySk).toBeDefined();
    const memory = new ClaimState();
    memory.offerReady({ id: task.id, type: 'keyed', shard: shardForId(task.id), readySk: readySk! });
    const sent = requestLog(own);
    const round = await own.store.claim({ workerId: 'w1', types: ['keyed'], max: 8 }, memory);
    expect(round.claimed.map((c) => c.task.id)).toEqual([task.id]);
    expect(round.handedOnly).toBe(true);
    // Only the lane is read (a higher priority would come first); no shard of the ready index.
    expect(sent.filter((r) => r.startsWith('QueryCommand'))).toEqual(['QueryCommand keyed#lane']);
    expect(sent.filter((r) => r.startsWith('UpdateItemCommand'))).toHaveLength(1);
    // The same key again (another worker took it, or this one did): its write loses, nothing else breaks.
    memory.offerReady({ id: task.id, type: 'keyed', shard: shardForId(task.id), readySk: readySk! });
    const again = await own.store.claim({ workerId: 'w2', types: ['keyed'], max: 8 }, memory);
    expect(again.claimed).toEqual([]);
    expect(again.lostRaces).toBe(1);
    expect(again.handedOnly).toBeUndefined();
  });

  it('a delayed task or one at another priority carries no key in its enqueue event', async () => {
    const own = await createTestStore(server.endpoint);
    const enqueued: { readySk?: string }[] = [];
    own.store.events.on('task:enqueued', (e) => void enqueued.push(e));
    await own.store.enqueue({ type: 'keyed', owner: 'o', payload: {}, delayMs: 60_000 });
    await own.store.enqueue({ type: 'keyed', owner: 'o', payload: {}, priority: 5 });
    expect(enqueued.map((e) => e.readySk)).toEqual([undefined, undefined]);
  });
});

describe('writes under a lease', () => {
  it('a complete whose first attempt applied but whose answer was lost is reported as success', async () => {
    const s = await createTestStore(server.endpoint);
    await s.store.enqueue({ type: 'lost-complete', owner: 'o' });
    const c = (await s.store.claim({ workerId: 'w', types: ['lost-complete'], max: 1 })).claimed[0]!;
    const fault = dropNextAnswer(s.client, 'UpdateItem');
    s.meter.reset();
    const done = await s.store.complete({ lease: c.lease, result: 42 });
    expect(fault.dropped).toBe(1);
    expect(done).toMatchObject({ status: 'SUCCESS', result: 42 });
    // Sent twice (the retry failed its condition), then read back once.
    expect(s.meter.count('UpdateItem')).toBe(2);
    expect(s.meter.count('GetItem')).toBe(1);
  });

  it('a complete that applied but missed our deadline is sent again and found applied by its write id', async () => {
    const s = await createTestStore(server.endpoint);
    await s.store.enqueue({ type: 'deadline-complete', owner: 'o' });
    const c = (await s.store.claim({ workerId: 'w', types: ['deadline-complete'], max: 1 })).claimed[0]!;
    const fault = dropNextAnswer(s.client, 'UpdateItem', 'deadline');
    s.meter.reset();
    expect(await s.store.complete({ lease: c.lease, result: 'ok' })).toMatchObject({
      status: 'SUCCESS',
      result: 'ok',
    });
    expect(fault.dropped).toBe(1);
    expect([s.meter.count('UpdateItem'), s.meter.count('GetItem')]).toEqual([2, 1]);
  });

  it('a claim that applied but missed our deadline is found by its write id and kept', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'deadline-claim', owner: 'o' });
    const fault = dropNextAnswer(s.client, 'UpdateItem', 'deadline');
    const { claimed } = await s.store.claim({ workerId: 'w', types: ['deadline-claim'], max: 1 });
    expect(fault.dropped).toBe(1);
    expect(claimed.map((c) => c.task.id)).toEqual([task.id]);
  });

  it('a stale token is refused after recovery and a re-claim by the same worker id', async () => {
    const s = await createTestStore(server.endpoint);
    const { task } = await s.store.enqueue({ type: 'stale', owner: 'o' });
    const old = (await s.store.claim({ workerId: 'same-worker', types: ['stale'], max: 1 })).claimed[0]!;
    s.clock.advance(s.config.leaseTimeoutMs + s.config.clockSkewMs + 1);
    expect((await s.store.recover()).requeued).toBe(1);
    const fresh = (await s.store.claim({ workerId: 'same-worker', types: ['stale'], max: 1 })).claimed[0]!;
    expect(fresh.lease).toMatchObject({ taskId: task.id, owner: 'same-worker', token: 2 });

    const error = await s.store.complete({ lease: old.lease, result: 'late' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(error).toMatchObject({ name: 'LeaseLostError', taskId: task.id, token: 1 });
    expect((error as LeaseLostError).current).toMatchObject({ status: 'RUNNING', leaseToken: 2 });
    await expect(s.store.fail({ lease: old.lease, error: 'late' })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(s.store.release({ lease: old.lease })).rejects.toBeInstanceOf(LeaseLostError);
    const [renewal] = await s.store.renew({ leases: [old.lease] });
    expect(renewal).toMatchObject({ outcome: 'lost', current: { leaseToken: 2 } });

    expect(await s.store.complete({ lease: fresh.lease, result: 'on time' })).toMatchObject({
      status: 'SUCCESS',
      result: 'on time',
      leaseToken: 2,
      attempts: 2,
    });
  });
});

/** Every request the store sends from now on, as `<command> <its :p value>` (the partition a query reads). */
function requestLog(store: TestStore): string[] {
  const sent: string[] = [];
  store.client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
      sent.push(`${String(context.commandName)} ${String(input.ExpressionAttributeValues?.[':p'] ?? '')}`);
      return next(args);
    },
    { step: 'initialize', name: 'testRequestLog' },
  );
  return sent;
}
