/**
 * Groups and fair shares (shared/group-rules.ts, store/group-slots.ts, store/rotation-round.ts): the
 * pure rules on a fixed clock; then a store on a manual clock that runs a group's tasks one at a time in
 * claim order, never lets a deep group stand in front of another group or of ungrouped work, frees a
 * dead holder's group slot when its lease is recovered, fences off a claim that never landed, honours
 * `groupConcurrency`, serves owners of a fair-share type in turn, and refuses a bad group without a write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claimKeyOf,
  judgeGroupSlot,
  pastRotation,
  rotationForTask,
  rotationKeyOf,
  rotationOfSortKey,
  rotationSortKey,
  groupClaimPendingMs,
  headAlreadyRan,
  type TypeGrouping,
} from '../shared/group-rules.js';
import { ValidationError } from '../shared/errors.js';
import { ClaimState } from '../shared/store/claim-state.js';
import { takeGroupSlot } from '../shared/store/group-slots.js';
import { readySortKey, taskKey } from '../shared/table-layout.js';
import { TaskStatus } from '../shared/task-model.js';
import { conditionalUpdate } from '../shared/store/conditional-write.js';
import { writeTargetOf } from '../shared/store/context.js';
import { asUpdate, claimed as claimEdge } from '../shared/store/transitions.js';
import type { Claimed } from '../shared/store/claim.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const CONFIG = { clockSkewMs: 1_000, requestDeadlineMs: 500 };

describe('group rules (pure, fixed clock)', () => {
  it('a rotation key sorts its entries together, and its skip key lands past them and before the next', () => {
    // Any owner (spaces, a lone surrogate, 256 characters) becomes 22 characters of [A-Za-z0-9_-].
    for (const owner of ['arn:aws:iam::1:role/p q', 'x\ud800', 'é'.repeat(256)])
      expect(rotationKeyOf(owner, 'cust-1')).toMatch(/^g\/[A-Za-z0-9_-]{22}\/cust-1$/);
    expect(rotationKeyOf('a', 'g')).not.toBe(rotationKeyOf('b', 'g'));
    const keys = ['cust-1', 'cust-1!', 'cust-10', 'cust-1~', 'cust-2'].flatMap((g) =>
      [3, 1, 2].map((n) => rotationSortKey(rotationKeyOf('o', g), readySortKey(0, n, n, `id${n}`))),
    );
    keys.sort();
    for (const k of keys) {
      const r = rotationOfSortKey(k);
      // Every entry of a rotation sorts below its skip key; every entry of a later one above it.
      for (const other of keys) {
        const o = rotationOfSortKey(other);
        if (o === r) expect(other < pastRotation(r)).toBe(true);
        else if (other > k) expect(other > pastRotation(r)).toBe(true);
      }
      expect(claimKeyOf(k)).toMatch(/^1000#/);
    }
    expect(claimKeyOf(readySortKey(0, 1, 1, 'x'))).toBe(readySortKey(0, 1, 1, 'x'));
  });

  it('only grouped tasks and fair-share types rotate', () => {
    const grouping: TypeGrouping = { concurrency: {}, fairShares: ['fair'] };
    expect(rotationForTask(grouping, { type: 'plain', owner: 'o' })).toBeUndefined();
    expect(rotationForTask(grouping, { type: 'plain', owner: 'o', group: 'g' })).toBe(
      rotationKeyOf('o', 'g'),
    );
    expect(rotationForTask(grouping, { type: 'fair', owner: 'o' })).toBe(rotationKeyOf('o', undefined));
  });

  it('tells a stale head (its own last claim ran it, and it finished) from a retried one', () => {
    const slot = { claimId: 'c1', taskId: 't1', takenAt: 0 };
    expect(headAlreadyRan(slot, { status: TaskStatus.SUCCESS, groupClaim: 'c1' }, 't1')).toBe(true);
    expect(headAlreadyRan(slot, { status: TaskStatus.QUEUED, groupClaim: 'c1' }, 't1')).toBe(false);
    expect(headAlreadyRan(slot, { status: TaskStatus.SUCCESS, groupClaim: 'c1' }, 't2')).toBe(false);
    expect(headAlreadyRan(slot, { status: TaskStatus.SUCCESS, groupClaim: 'c0' }, 't1')).toBe(false);
  });

  it('judges a slot from the claim it admitted, as its task shows it', () => {
    const now = 100_000;
    const slot = { claimId: 'c1', taskId: 't1', takenAt: now - 60_000 };
    const running = { status: TaskStatus.RUNNING, groupClaim: 'c1', leaseUntil: now + 5_000 };
    expect(judgeGroupSlot(undefined, undefined, now, CONFIG)).toBe('free');
    expect(judgeGroupSlot({}, undefined, now, CONFIG)).toBe('free');
    expect(judgeGroupSlot(slot, running, now, CONFIG)).toBe('held');
    expect(judgeGroupSlot(slot, { ...running, status: TaskStatus.SUCCESS }, now, CONFIG)).toBe('free');
    expect(judgeGroupSlot(slot, { ...running, status: TaskStatus.QUEUED }, now, CONFIG)).toBe('free');
    // A lease past the skew margin: recover the task first. Within the margin it is still held.
    expect(judgeGroupSlot(slot, { ...running, leaseUntil: now - 1_001 }, now, CONFIG)).toBe('recoverFirst');
    expect(judgeGroupSlot(slot, { ...running, leaseUntil: now - 1_000 }, now, CONFIG)).toBe('held');
    // The claim never showed on the task: held while it may still land, then fenced off first.
    const notLanded = { status: TaskStatus.QUEUED, groupClaim: 'older' };
    const fresh = { ...slot, takenAt: now - groupClaimPendingMs(CONFIG) + 1 };
    expect(judgeGroupSlot(fresh, notLanded, now, CONFIG)).toBe('held');
    expect(judgeGroupSlot({ ...fresh, takenAt: fresh.takenAt - 1 }, notLanded, now, CONFIG)).toBe(
      'voidFirst',
    );
    expect(judgeGroupSlot(slot, { status: TaskStatus.QUEUED }, now, CONFIG)).toBe('voidFirst');
    // Landed and ended frees it at once, however recent the take: serial groups of short tasks do not wait.
    expect(judgeGroupSlot(fresh, { ...running, status: TaskStatus.SUCCESS }, now, CONFIG)).toBe('free');
    expect(judgeGroupSlot(slot, undefined, now, CONFIG)).toBe('free');
  });
});

const enqueueGroup = (s: TestStore, group: string | undefined, n: number, owner = 'o', type = 'job') =>
  (async () => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      ids.push((await s.store.enqueue({ type, owner, ...(group ? { group } : {}) })).task.id);
      s.clock.advance(1);
    }
    return ids;
  })();

const claimRound = async (s: TestStore, memory: ClaimState, max = 10, workerId = 'w1', types = ['job']) =>
  (await s.store.claim({ workerId, types, max, groupedTypes: types }, memory)).claimed;

const done = (s: TestStore, c: Claimed) => s.store.complete({ lease: c.lease, result: null });

describe('grouped claims (dynalite or DynamoDB Local)', () => {
  it('runs a group one at a time in claim order, beside other groups and ungrouped work', async () => {
    const s = await createTestStore(server.endpoint);
    const a = await enqueueGroup(s, 'a', 3);
    const b = await enqueueGroup(s, 'b', 2);
    const [plain] = await enqueueGroup(s, undefined, 1);
    const memory = new ClaimState();
    const first = await claimRound(s, memory);
    expect(first.map((c) => c.task.id).sort()).toEqual([a[0], b[0], plain].sort());
    expect(first.find((c) => c.task.id === a[0])!.task.group).toBe('a');
    // Both groups are busy: nothing more of them, however many rounds.
    expect(await claimRound(s, memory)).toEqual([]);
    expect(await claimRound(s, memory)).toEqual([]);
    await done(
      s,
      first.find((c) => c.task.id === a[0])!,
    );
    const second = await claimRound(s, memory);
    expect(second.map((c) => c.task.id)).toEqual([a[1]]);
    // One write more per grouped start: the group's slot item, one per group, nothing else.
    const slots = (await s.scanAll()).filter((i) => String(i.pk).startsWith('GROUP#'));
    expect(slots.map((i) => i.pk).sort()).toEqual(
      [`GROUP#job#${rotationKeyOf('o', 'a')}`, `GROUP#job#${rotationKeyOf('o', 'b')}`].sort(),
    );
  });

  it(
    'a group of 300 waiting does not delay another group or ungrouped tasks',
    { timeout: 30_000 },
    async () => {
      const s = await createTestStore(server.endpoint);
      const deep = await enqueueGroup(s, 'deep', 300);
      const [other] = await enqueueGroup(s, 'other', 1);
      const [plain] = await enqueueGroup(s, undefined, 1);
      const memory = new ClaimState();
      const round = await claimRound(s, memory, 3);
      expect(round.map((c) => c.task.id).sort()).toEqual([deep[0], other, plain].sort());
      // The deep group's 299 left cost one read each round, not 299.
      s.meter.reset();
      expect(await claimRound(s, memory, 3)).toEqual([]);
      expect(s.meter.count('Query')).toBeLessThanOrEqual(24);
    },
  );

  it('takes no slot for a head that already ran (a stale read): no write', async () => {
    const s = await createTestStore(server.endpoint);
    const [first] = await enqueueGroup(s, 'g', 2);
    const [won] = await claimRound(s, new ClaimState());
    await done(s, won!);
    s.meter.reset();
    expect(await takeGroupSlot(s.store.ctx, 'job', rotationKeyOf('o', 'g'), first!, 'stale')).toBeUndefined();
    expect(s.meter.count('UpdateItem', 'PutItem')).toBe(0);
  });

  it('counts rotated tasks in the queue depth, so the scheduled tick sees their type waiting', async () => {
    const s = await createTestStore(server.endpoint);
    await enqueueGroup(s, 'a', 3);
    await enqueueGroup(s, 'b', 2);
    const depth = await s.store.depth(['job']);
    expect([depth.ready, depth.byType.job?.ready]).toEqual([5, 5]);
  });

  it('a dead holder’s group slot frees when its lease is recovered', async () => {
    const s = await createTestStore(server.endpoint);
    const [first, second] = await enqueueGroup(s, 'g', 2);
    const memory = new ClaimState();
    const [won] = await claimRound(s, memory);
    expect(won!.task.id).toBe(first);
    // The holder dies. Within the lease the group stays busy.
    s.clock.advance(s.config.leaseTimeoutMs - 1);
    expect(await claimRound(s, memory, 10, 'w2')).toEqual([]);
    // Past the lease and the skew margin: the next claimer recovers the task, which is its group's head
    // again, and takes it (on a later visit: the slot waits for the head, not for the task in hand).
    s.clock.advance(s.config.clockSkewMs + 2);
    const next = [...(await claimRound(s, memory, 10, 'w2')), ...(await claimRound(s, memory, 10, 'w2'))];
    expect(next.map((c) => c.task.id)).toEqual([first]);
    expect(next[0]!.task.attempts).toBe(2);
    expect((await s.store.get({ id: second! })).status).toBe(TaskStatus.QUEUED);
  });

  it('fences off a claim that never landed, so it cannot land late beside the new holder', async () => {
    const s = await createTestStore(server.endpoint);
    const [first] = await enqueueGroup(s, 'g', 2);
    const ctx = s.store.ctx;
    const rotation = rotationKeyOf('o', 'g');
    const itemOf = async (id: string) => (await s.scanAll()).find((i) => i.pk === taskKey(id).pk)!;
    // Claimer A took the slot for `first`, then stalled before its claim write.
    const a = await takeGroupSlot(ctx, 'job', rotation, first!, 'a');
    const memory = new ClaimState();
    expect(await claimRound(s, memory)).toEqual([]);
    // Past the pending window B fences A's claim off and takes the slot for `first`; B stalls too.
    s.clock.advance(groupClaimPendingMs(s.config));
    const b = await takeGroupSlot(ctx, 'job', rotation, first!, 'b');
    expect(b).toBeDefined();
    expect([...((await itemOf(first!)).groupVoids as Set<string>)]).toEqual([a!.claimId]);
    // Later a third claimer fences B's claim off too, and claims `first` itself.
    s.clock.advance(groupClaimPendingMs(s.config));
    const [won] = await claimRound(s, memory);
    expect(won!.task.id).toBe(first);
    expect([...((await itemOf(first!)).groupVoids as Set<string>)].sort()).toEqual(
      [a!.claimId, b!.claimId].sort(),
    );
  });

  it('refuses a late claim write of a fenced claim while its task still waits at its head', async () => {
    const s = await createTestStore(server.endpoint);
    const [first] = await enqueueGroup(s, 'g', 1);
    const ctx = s.store.ctx;
    const rotation = rotationKeyOf('o', 'g');
    const stalled = await takeGroupSlot(ctx, 'job', rotation, first!, 'stalled');
    s.clock.advance(groupClaimPendingMs(s.config));
    // Another claimer judges the stalled claim and fences it off (the task still QUEUED at its head).
    const taker = await takeGroupSlot(ctx, 'job', rotation, first!, 'taker');
    expect(taker).toBeDefined();
    const item = (await s.scanAll()).find((i) => i.pk === taskKey(first!).pk)!;
    expect(item.status).toBe(TaskStatus.QUEUED);
    const c = {
      id: first!,
      type: 'job',
      shard: item.shard as number,
      readySk: item.readySk as string,
      rotation,
    };
    const now = s.clock.now();
    const late = await conditionalUpdate(
      writeTargetOf(ctx),
      taskKey(first!),
      asUpdate(claimEdge(c, 'stalled', now, now + 30_000, s.config, stalled!.claimId)),
    );
    expect(late.applied).toBe(false);
    // The taker's own claim of the same head applies.
    const own = await conditionalUpdate(
      writeTargetOf(ctx),
      taskKey(first!),
      asUpdate(claimEdge(c, 'taker', now, now + 30_000, s.config, taker!.claimId)),
    );
    expect(own.applied).toBe(true);
  });

  it('runs up to groupConcurrency of a group at once', async () => {
    const s = await createTestStore(
      server.endpoint,
      {},
      { grouping: { concurrency: { job: 2 }, fairShares: [] } },
    );
    const ids = await enqueueGroup(s, 'g', 5);
    const memory = new ClaimState();
    const won: Claimed[] = [];
    for (let round = 0; round < 4; round++) won.push(...(await claimRound(s, memory)));
    expect(won.map((c) => c.task.id)).toEqual(ids.slice(0, 2));
    await done(s, won[0]!);
    const more: Claimed[] = [];
    for (let round = 0; round < 3; round++) more.push(...(await claimRound(s, memory)));
    expect(more.map((c) => c.task.id)).toEqual([ids[2]]);
  });

  it('racing claimers never run two of one group at once', { timeout: 60_000 }, async () => {
    const s = await createTestStore(server.endpoint);
    const groups = ['a', 'b', 'c'];
    for (const g of groups) await enqueueGroup(s, g, 6);
    const workers = Array.from({ length: 6 }, (_, w) => ({
      store: s.peer({ random: Math.random }),
      memory: new ClaimState(),
      id: `w${w}`,
    }));
    const running = new Map<string, string>();
    let finished = 0;
    for (let step = 0; step < 200 && finished < 18; step++) {
      const rounds = await Promise.all(
        workers.map((w) =>
          w.store.claim({ workerId: w.id, types: ['job'], max: 2, groupedTypes: ['job'] }, w.memory),
        ),
      );
      // Every claim of this step runs at once: no group may appear twice among them.
      const claimed = rounds.flatMap((r) => r.claimed);
      const groupsNow = claimed.map((c) => c.task.group!);
      expect(new Set(groupsNow).size, `groups claimed together: ${groupsNow.join(', ')}`).toBe(
        groupsNow.length,
      );
      for (const c of claimed) running.set(c.task.group!, c.task.id);
      await Promise.all(claimed.map((c) => done(s, c)));
      for (const c of claimed) running.delete(c.task.group!);
      finished += claimed.length;
      // Time moves, so a slot whose claim never landed (an error under load) is judged and taken over.
      s.clock.advance(100);
    }
    expect(finished).toBe(18);
  });
});

describe('fair shares between owners (dynalite or DynamoDB Local)', () => {
  it(
    'starts a lone owner’s task in the first round behind another owner’s backlog',
    { timeout: 30_000 },
    async () => {
      const s = await createTestStore(
        server.endpoint,
        {},
        { grouping: { concurrency: {}, fairShares: ['job'] } },
      );
      await enqueueGroup(s, undefined, 300, 'big');
      const [lone] = await enqueueGroup(s, undefined, 1, 'lone');
      const memory = new ClaimState();
      const round = await claimRound(s, memory, 2, 'w1', ['job']);
      expect(round.map((c) => c.task.owner).sort()).toEqual(['big', 'lone']);
      expect(round.some((c) => c.task.id === lone)).toBe(true);
      // With one owner left, each wave of a round takes one more of it (it cannot tell that no other
      // owner's rotation follows the page it read): four a round.
      expect(await claimRound(s, memory, 8, 'w1', ['job'])).toHaveLength(4);
    },
  );
});

describe('a bad group', () => {
  it('is refused with what to fix, and nothing is written', async () => {
    const s = await createTestStore(server.endpoint);
    for (const group of ['', 'has space', 'x'.repeat(129), 'naïve'])
      await expect(s.store.enqueue({ type: 'job', owner: 'o', group })).rejects.toThrow(ValidationError);
    await expect(s.store.enqueue({ type: 'job', owner: 'o', group: 'a b' })).rejects.toThrow(
      /group.*printable ASCII/,
    );
    expect(await s.scanAll()).toEqual([]);
  });
});
