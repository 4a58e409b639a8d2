import type { Clock } from '../shared/clock.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTask } from '../shared/tasks/define.js';
import { MemoryHistory, recordHistory } from './chaos/history.js';
import { completingWithoutToken } from './chaos/seeded-bug.js';
import { deferred } from './support/fleet-fakes.js';
import { checkHistory, type CheckInput, type Recorded } from './chaos/checker.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import {
  createWorkerWorld,
  partitionedAfterFirstClaim,
  silentLogger,
  sleep,
} from './support/worker-world.js';
import { Worker } from '../shared/worker/worker.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const config: CheckInput['config'] = {
  leaseTimeoutMs: 1_000,
  recoveryIntervalMs: 1_000,
  clockSkewMs: 100,
  requestDeadlineMs: 50,
  limits: { limited: 1 },
};
const ev = (t: number, w: string, e: Record<string, unknown>) => ({ t, w, off: 0, ...e }) as Recorded;
const done = (id: string, token = 1, type = 'plain') => ({
  id,
  type,
  status: 'SUCCESS',
  attempts: token,
  maxAttempts: 3,
  leaseToken: token,
});

describe('the chaos checker (pure)', () => {
  const clean: Recorded[] = [
    ev(0, 'a', { ev: 'claim', task: 't1', token: 1, leaseUntil: 1_000 }),
    ev(10, 'a', { ev: 'start', task: 't1', token: 1 }),
    ev(500, 'a', { ev: 'renew', task: 't1', token: 1, outcome: 'renewed', leaseUntil: 1_500 }),
    ev(600, 'a', { ev: 'end', task: 't1', token: 1 }),
    ev(601, 'a', { ev: 'write', task: 't1', token: 1, write: 'complete', outcome: 'sent' }),
    ev(610, 'a', { ev: 'write', task: 't1', token: 1, write: 'complete', outcome: 'ok', status: 'SUCCESS' }),
  ];

  it('passes a clean history', () => {
    const r = checkHistory({ history: clean, tasks: [done('t1')], enqueued: ['t1'], kills: [], config });
    expect(r.violations).toEqual([]);
    expect(r.figures).toMatchObject({ lost: 0, handlerStartsPerTask: 1, duplicateExecutionRate: 0 });
  });

  it('finds a lost task, a double terminal, a stale accepted write, overlapping leases and an exceeded limit', () => {
    const history: Recorded[] = [
      ...clean,
      // t2: the first holder's lease runs to 1000; a second claim at 300 overlaps it, and the first holder's
      // complete is accepted long after token 2 was claimed.
      ev(0, 'a', { ev: 'claim', task: 't2', token: 1, leaseUntil: 1_000 }),
      ev(300, 'b', { ev: 'claim', task: 't2', token: 2, leaseUntil: 1_300 }),
      ev(900, 'a', {
        ev: 'write',
        task: 't2',
        token: 1,
        write: 'complete',
        outcome: 'ok',
        status: 'SUCCESS',
      }),
      ev(950, 'b', {
        ev: 'write',
        task: 't2',
        token: 2,
        write: 'complete',
        outcome: 'ok',
        status: 'SUCCESS',
      }),
      // Two "limited" tasks with valid leases at once (limit 1).
      ev(0, 'a', { ev: 'claim', task: 'l1', token: 1, leaseUntil: 1_000 }),
      ev(100, 'b', { ev: 'claim', task: 'l2', token: 1, leaseUntil: 1_100 }),
      ev(500, 'a', {
        ev: 'write',
        task: 'l1',
        token: 1,
        write: 'complete',
        outcome: 'ok',
        status: 'SUCCESS',
      }),
      ev(600, 'b', {
        ev: 'write',
        task: 'l2',
        token: 1,
        write: 'complete',
        outcome: 'ok',
        status: 'SUCCESS',
      }),
    ];
    const r = checkHistory({
      history,
      tasks: [done('t1'), done('t2', 2), done('l1', 1, 'limited'), done('l2', 1, 'limited')],
      enqueued: ['t1', 't2', 'l1', 'l2', 'gone'],
      kills: [],
      config,
    });
    const found = new Set(r.violations.map((v) => v.invariant));
    expect(found).toEqual(
      new Set([
        'no task lost',
        'exactly one terminal state',
        'no write accepted from a non-current token',
        'valid leases never overlap',
        'concurrency limit never exceeded',
      ]),
    );
    expect(r.figures).toMatchObject({
      lost: 1,
      doubleTerminals: 1,
      staleWritesAccepted: 1,
      overlappingLeases: 1,
      peakConcurrency: { limited: 2 },
    });
  });

  it('finds more starts of a rate-limited type in a window than its limit, from the claims’ startedAt', () => {
    const claimAt = (t: number, task: string, startedAt: number) => [
      ev(t, 'a', { ev: 'claim', task, token: 1, leaseUntil: startedAt + 1_000, startedAt }),
      ev(t + 1, 'a', { ev: 'start', task, token: 1 }),
      ev(t + 2, 'a', { ev: 'end', task, token: 1 }),
      ev(t + 3, 'a', { ev: 'write', task, token: 1, write: 'complete', outcome: 'ok', status: 'SUCCESS' }),
    ];
    const rated = { ...config, rateLimits: { rated: { limit: 2, intervalMs: 1_000 } } };
    const ids = ['r1', 'r2', 'r3'];
    const tasks = ids.map((id) => done(id, 1, 'rated'));
    // Starts at 0, 999 and 1999: every window of a second holds two.
    const within = [...claimAt(0, 'r1', 0), ...claimAt(999, 'r2', 999), ...claimAt(1_999, 'r3', 1_999)];
    const ok = checkHistory({ history: within, tasks, enqueued: ids, kills: [], config: rated });
    expect(ok.violations).toEqual([]);
    expect(ok.figures.mostStartsPerWindow).toEqual({ rated: 2 });
    // A third start at 998 (in its writer's clock, whenever it was recorded) makes three in [0, 1000).
    const over = [...claimAt(0, 'r1', 0), ...claimAt(999, 'r2', 999), ...claimAt(2_500, 'r3', 998)];
    const bad = checkHistory({ history: over, tasks, enqueued: ids, kills: [], config: rated });
    expect(bad.violations).toEqual([
      { invariant: 'rate limit never exceeded', detail: 'rated: 3 starts in a window of 1000 ms, limit 2' },
    ]);
  });

  it('finds two valid leases of one group at once beyond its groupConcurrency, and none across groups', () => {
    const leaseAt = (t: number, task: string, until: number) => [
      ev(t, 'a', { ev: 'claim', task, token: 1, leaseUntil: until }),
      ev(t + 1, 'a', { ev: 'start', task, token: 1 }),
      ev(until - 2, 'a', { ev: 'end', task, token: 1 }),
      ev(until - 1, 'a', {
        ev: 'write',
        task,
        token: 1,
        write: 'complete',
        outcome: 'ok',
        status: 'SUCCESS',
      }),
    ];
    const grouped = { ...config, groupConcurrency: { job: 1 } };
    const tasks = [
      { ...done('g1', 1, 'job'), group: 'a' },
      { ...done('g2', 1, 'job'), group: 'a' },
      { ...done('g3', 1, 'job'), group: 'b' },
    ];
    const ids = tasks.map((t) => t.id);
    // g1 then g2 in group a, g3 of group b beside both: within the limit.
    const serial = [...leaseAt(0, 'g1', 1_000), ...leaseAt(1_000, 'g2', 2_000), ...leaseAt(500, 'g3', 1_500)];
    const ok = checkHistory({ history: serial, tasks, enqueued: ids, kills: [], config: grouped });
    expect(ok.violations).toEqual([]);
    expect(ok.figures.peakGroupConcurrency).toEqual({ job: 1 });
    // g2 claimed while g1 still holds its lease: two of group a at once.
    const overlap = [...leaseAt(0, 'g1', 1_000), ...leaseAt(600, 'g2', 1_600), ...leaseAt(500, 'g3', 1_500)];
    const bad = checkHistory({ history: overlap, tasks, enqueued: ids, kills: [], config: grouped });
    expect(bad.violations.map((v) => v.invariant)).toEqual(['group concurrency never exceeded']);
    expect(bad.violations[0]!.detail).toMatch(/^job group a: 2 valid leases at once, limit 1/);
  });

  it('counts a recovery fix whose outcome went unrecorded as unknown, and nothing else', () => {
    // t4's holder died; its lease ran out on the last attempt. Recovery sent a fix (intent) whose answer
    // never came back (nor its read-back): the task ends FAILED with no accepted terminal write.
    const died: Recorded[] = [
      ev(0, 'a', { ev: 'intent', task: 't4', op: 'claim' }),
      ev(5, 'a', { ev: 'claim', task: 't4', token: 3, leaseUntil: 1_000 }),
      ev(10, 'a', { ev: 'start', task: 't4', token: 3 }),
    ];
    const failed = [{ ...done('t4', 3), status: 'FAILED' }];
    const open = [...died, ev(1_200, 'r', { ev: 'intent', task: 't4', op: 'recover' })];
    expect(
      checkHistory({ history: open, tasks: failed, enqueued: ['t4'], kills: [], config }).violations,
    ).toEqual([]);
    // Without the intent nothing explains the terminal state.
    expect(
      checkHistory({ history: died, tasks: failed, enqueued: ['t4'], kills: [], config }).violations.map(
        (v) => v.invariant,
      ),
    ).toEqual(['exactly one terminal state']);
    // An intent its writer settled (the fix recorded: a requeue) explains nothing more.
    const settled = [
      ...open,
      ev(1_210, 'r', { ev: 'recover', task: 't4', token: 3, leaseUntil: 1_000, action: 'requeued' }),
    ];
    expect(
      checkHistory({ history: settled, tasks: failed, enqueued: ['t4'], kills: [], config }).violations.map(
        (v) => v.invariant,
      ),
    ).toEqual(['exactly one terminal state']);
    // Nor does an open intent from before the final token's claim.
    const earlier = [ev(-500, 'r', { ev: 'intent', task: 't4', op: 'recover' }), ...died];
    expect(
      checkHistory({ history: earlier, tasks: failed, enqueued: ['t4'], kills: [], config }).violations.map(
        (v) => v.invariant,
      ),
    ).toEqual(['exactly one terminal state']);
  });

  it("with the table's record of status writes, checks what DynamoDB applied, not only what writers recorded", () => {
    const died: Recorded[] = [
      ev(5, 'a', { ev: 'claim', task: 't5', token: 3, leaseUntil: 1_000 }),
      ev(1_200, 'r', { ev: 'intent', task: 't5', op: 'recover' }),
    ];
    const failed = [{ ...done('t5', 3), status: 'FAILED' }];
    const wire = (status: string, t: number, delivered = true) => ({
      task: 't5',
      status,
      t,
      delivered,
      applied: 'yes' as const,
    });
    const check = (statusWrites: ReturnType<typeof wire>[], history = died) =>
      checkHistory({ history, tasks: failed, enqueued: ['t5'], kills: [], config, statusWrites });
    // Recovery's fix applied, its answer lost: no history has it, the table's record does.
    const one = check([wire('RUNNING', 5), wire('FAILED', 1_210, false)]);
    expect(one.violations).toEqual([]);
    expect(one.figures.terminalWritesUnrecorded).toBe(1);
    // Two applied terminal writes, or none, break the invariant whatever the histories say.
    expect(
      check([wire('FAILED', 1_210, false), wire('FAILED', 1_300)]).violations.map((v) => v.invariant),
    ).toEqual(['exactly one terminal state']);
    expect(check([wire('RUNNING', 5)]).violations.map((v) => v.invariant)).toEqual([
      'exactly one terminal state',
    ]);
    // A history that claims a terminal write accepted which never reached DynamoDB is caught too.
    const claimed = [
      ...died,
      ev(900, 'a', { ev: 'write', task: 't5', token: 3, write: 'fail', outcome: 'ok', status: 'FAILED' }),
    ];
    expect(check([wire('RUNNING', 5)], claimed).violations.map((v) => v.invariant)).toEqual([
      'exactly one terminal state',
    ]);
  });

  it('finds a task recovered too late after its holder died', () => {
    const history: Recorded[] = [
      ev(0, 'a', { ev: 'claim', task: 't3', token: 1, leaseUntil: 1_000 }),
      ev(9_000, 'r', { ev: 'recover', task: 't3', token: 1, leaseUntil: 1_000, action: 'failed' }),
    ];
    const r = checkHistory({
      history,
      tasks: [{ ...done('t3'), status: 'FAILED' }],
      enqueued: ['t3'],
      kills: [{ worker: 'a', t: 100 }],
      config,
    });
    expect(r.violations.map((v) => v.invariant)).toEqual([
      'recovered within leaseTimeout + recoveryInterval',
    ]);
  });
});

describe('a seeded bug: completing without the token condition', () => {
  /** A holder cut off from renewals outlives its lease; another worker takes the task over. */
  async function scenario(seededBug: 'none' | 'complete-without-token') {
    // The cut-off holder's handler ends a second after the task is taken over, so its completion is
    // sent while the new holder runs, however slowly the machine gets there (a fixed duration raced the
    // takeover), and after the checker's allowance for writes in flight (4 request deadlines).
    const takenOver = deferred();
    let executions = 0;
    const w = await createWorkerWorld(server.endpoint, [
      defineTask({
        name: 'slow',
        schema: z.object({ ms: z.number() }),
        maxAttempts: 3,
        handler: async ({ ms }) => {
          if (executions++ === 0) await takenOver.promise.then(() => sleep(1_000));
          else await sleep(ms);
          return 'done';
        },
      }),
    ]);
    const history = new MemoryHistory('unused');
    const { task } = await w.submitter.enqueue({ type: 'slow', payload: { ms: 3_200 }, owner: 'o' });
    const cut = partitionedAfterFirstClaim(w.peer());
    const mk = (id: string, store = w.peer(), clock?: Clock) => {
      recordHistory(store.events, history.as(id));
      const leaseStore = seededBug === 'complete-without-token' ? completingWithoutToken(store) : store;
      return new Worker({
        store: leaseStore,
        registry: w.registry,
        config: w.config,
        events: store.events,
        workerId: id,
        logger: silentLogger(),
        ...(clock ? { clock } : {}),
      });
    };
    // Its clock runs 10 s behind (a paused process wakes with the same view): it believes its lease
    // still valid, so its handler finishes and it sends the completion after the takeover.
    const first = mk('cut-off', cut, { now: () => Date.now() - 10_000 });
    // An idle window longer than one claim round on a loaded machine: a round whose read timed out
    // (150 ms deadlines) comes back empty, and a shorter window would end the run before it claims.
    const firstRun = first.run({ idleStopMs: 1_000 });
    let firstRunEnded = false;
    void firstRun.then(
      () => (firstRunEnded = true),
      () => (firstRunEnded = true),
    );
    // Wait on the claim's own lease end (a fixed sleep from the start guesses when the claim landed).
    let claimed: { leaseUntil?: number } | undefined;
    while (!(claimed = history.events.find((e) => e.ev === 'claim') as { leaseUntil?: number } | undefined)) {
      if (firstRunEnded) throw new Error('the cut-off worker stopped without claiming the task');
      await sleep(10);
    }
    await sleep(claimed.leaseUntil! + w.config.clockSkewMs + 50 - Date.now());
    const report = await w.peer().recover();
    for (const fix of report.fixes)
      history.as('recovery').record({
        ev: 'recover',
        task: fix.taskId,
        token: fix.token,
        leaseUntil: fix.leaseUntil,
        action: fix.action,
      });
    const healthyStore = w.peer();
    healthyStore.events.on('claim:won', () => takenOver.resolve());
    // Two seconds of idle: on a loaded machine a claim round whose read misses its deadline comes back
    // empty, and the next round (a poll interval later) must still come before the run stops.
    await Promise.all([firstRun, mk('healthy', healthyStore).run({ idleStopMs: 2_000 })]);
    const final = (await w.scanAll()).filter((i) => i.type === 'slow') as never[];
    return checkHistory({
      history: history.events,
      tasks: final,
      enqueued: [task.id],
      kills: [],
      config: { ...w.config, limits: {} },
    });
  }

  it(
    'without the bug the checker finds nothing; with it, the stale completion is caught',
    { timeout: 30_000 },
    async () => {
      const [correct, buggy] = await Promise.all([scenario('none'), scenario('complete-without-token')]);
      expect(correct.violations).toEqual([]);
      expect(correct.figures.staleWritesRefused).toBeGreaterThanOrEqual(1);
      expect(buggy.violations.map((v) => v.invariant)).toContain(
        'no write accepted from a non-current token',
      );
      expect(buggy.figures.staleWritesAccepted).toBe(1);
    },
  );
});
