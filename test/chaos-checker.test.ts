import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTask } from '../shared/tasks/define.js';
import { MemoryHistory } from '../shared/worker/history.js';
import { checkHistory, type CheckInput, type Recorded } from './chaos/checker.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, partitionedAfterFirstClaim, silentLogger, sleep } from './support/worker-world.js';
import { Worker } from '../shared/worker/worker.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const config: CheckInput['config'] = { leaseTimeoutMs: 1_000, recoveryIntervalMs: 1_000, clockSkewMs: 100, requestDeadlineMs: 50, limits: { limited: 1 } };
const ev = (t: number, w: string, e: Record<string, unknown>) => ({ t, w, off: 0, ...e }) as Recorded;
const done = (id: string, token = 1, type = 'plain') => ({ id, type, status: 'SUCCESS', attempts: token, maxAttempts: 3, leaseToken: token });

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
      ev(900, 'a', { ev: 'write', task: 't2', token: 1, write: 'complete', outcome: 'ok', status: 'SUCCESS' }),
      ev(950, 'b', { ev: 'write', task: 't2', token: 2, write: 'complete', outcome: 'ok', status: 'SUCCESS' }),
      // Two "limited" tasks with valid leases at once (limit 1).
      ev(0, 'a', { ev: 'claim', task: 'l1', token: 1, leaseUntil: 1_000 }),
      ev(100, 'b', { ev: 'claim', task: 'l2', token: 1, leaseUntil: 1_100 }),
      ev(500, 'a', { ev: 'write', task: 'l1', token: 1, write: 'complete', outcome: 'ok', status: 'SUCCESS' }),
      ev(600, 'b', { ev: 'write', task: 'l2', token: 1, write: 'complete', outcome: 'ok', status: 'SUCCESS' }),
    ];
    const r = checkHistory({ history, tasks: [done('t1'), done('t2', 2), done('l1', 1, 'limited'), done('l2', 1, 'limited')], enqueued: ['t1', 't2', 'l1', 'l2', 'gone'], kills: [], config });
    const found = new Set(r.violations.map((v) => v.invariant));
    expect(found).toEqual(
      new Set(['no task lost', 'exactly one terminal state', 'no write accepted from a non-current token', 'valid leases never overlap', 'concurrency limit never exceeded']),
    );
    expect(r.figures).toMatchObject({ lost: 1, doubleTerminals: 1, staleWritesAccepted: 1, overlappingLeases: 1, peakConcurrency: { limited: 2 } });
  });

  it('finds a task recovered too late after its holder died', () => {
    const history: Recorded[] = [ev(0, 'a', { ev: 'claim', task: 't3', token: 1, leaseUntil: 1_000 }), ev(9_000, 'r', { ev: 'recover', task: 't3', token: 1, leaseUntil: 1_000, action: 'failed' })];
    const r = checkHistory({ history, tasks: [{ ...done('t3'), status: 'FAILED' }], enqueued: ['t3'], kills: [{ worker: 'a', t: 100 }], config });
    expect(r.violations.map((v) => v.invariant)).toEqual(['recovered within leaseTimeout + recoveryInterval']);
  });
});

describe('a seeded bug: completing without the token condition', () => {
  /** A holder cut off from renewals outlives its lease; another worker takes the task over. */
  async function scenario(seededBug: 'none' | 'complete-without-token') {
    const w = await createWorkerWorld(server.endpoint, [defineTask({ name: 'slow', schema: z.object({ ms: z.number() }), maxAttempts: 3, handler: ({ ms }) => sleep(ms).then(() => 'done') })], { testSeededBug: seededBug });
    const history = new MemoryHistory('unused');
    const { task } = await w.queue.enqueue({ type: 'slow', payload: { ms: 3_200 }, owner: 'o' });
    const cut = partitionedAfterFirstClaim(w.peer());
    const mk = (id: string, store = w.peer()) => new Worker({ store, registry: w.registry, config: w.config, workerId: id, logger: silentLogger(), history: history.as(id) });
    const first = mk('cut-off', cut);
    const firstRun = first.run({ idleStopMs: 100 });
    await sleep(w.config.leaseTimeoutMs + w.config.clockSkewMs + 50);
    const report = await w.peer().recover();
    for (const fix of report.fixes) history.as('recovery').record({ ev: 'recover', task: fix.taskId, token: fix.token, leaseUntil: fix.leaseUntil, action: fix.action });
    await Promise.all([firstRun, mk('healthy').run()]);
    const final = (await w.scanAll()).filter((i) => i.type === "slow") as never[];
    return checkHistory({ history: history.events, tasks: final, enqueued: [task.id], kills: [], config: { ...w.config, limits: {} } });
  }

  it('without the bug the checker finds nothing; with it, the stale completion is caught', { timeout: 30_000 }, async () => {
    const [correct, buggy] = await Promise.all([scenario('none'), scenario('complete-without-token')]);
    expect(correct.violations).toEqual([]);
    expect(correct.figures.staleWritesRefused).toBeGreaterThanOrEqual(1);
    expect(buggy.violations.map((v) => v.invariant)).toContain('no write accepted from a non-current token');
    expect(buggy.figures.staleWritesAccepted).toBe(1);
  });
});
