/**
 * Pausing a type with a real worker on dynalite: a paused type's task is enqueued and waits (no claim,
 * no attempt spent) while another type's runs; the task running when the pause lands finishes; after
 * resume the waiting task runs. The worker reads the pauses at most once a poll interval and only when
 * it claims; the pure refresh rule and that bound are checked on a manual clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PausedTypes, pausesAreStale } from '../shared/worker/paused-types.js';
import { TaskStatus } from '../shared/task-model.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { ManualClock } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, silentLogger, sleep } from './support/worker-world.js';
import { Worker } from '../shared/worker/worker.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('the refresh rule (pure)', () => {
  it('reads again once the refresh interval has passed, or when the clock went back', () => {
    expect(pausesAreStale(undefined, 1_000, 500)).toBe(true);
    expect(pausesAreStale(1_000, 1_499, 500)).toBe(false);
    expect(pausesAreStale(1_000, 1_500, 500)).toBe(true);
    expect(pausesAreStale(1_000, 900, 500)).toBe(true);
  });

  it('reads the controls at most once per interval, however often it is asked', async () => {
    const clock = new ManualClock(1_000);
    let reads = 0;
    let paused = new Set(['a']);
    const grouped = new Set(['a', 'b']);
    const gate = new PausedTypes(async () => (reads++, { paused, grouped }), clock, 500);
    expect(await gate.claimable(['a', 'b'])).toEqual({ types: ['b'], grouped: ['b'] });
    paused = new Set();
    for (let i = 0; i < 10; i++) expect((await gate.claimable(['a', 'b'])).types).toEqual(['b']);
    expect(reads).toBe(1);
    clock.advance(500);
    expect(await gate.claimable(['a', 'b'])).toEqual({ types: ['a', 'b'], grouped: ['a', 'b'] });
    expect(reads).toBe(2);
  });

  it('claims nothing when the controls cannot be read (the read’s error is the claim’s)', async () => {
    const gate = new PausedTypes(() => Promise.reject(new Error('throttled')), new ManualClock(0), 500);
    await expect(gate.claimable(['a'])).rejects.toThrow('throttled');
  });
});

describe('a paused type on a running worker (dynalite)', () => {
  it(
    'waits while paused, lets the running task finish, and runs after resume',
    { timeout: 30_000 },
    async () => {
      const w = await createWorkerWorld(server.endpoint, taskDefinitions);
      // The worker's default gate (its store's pauses), with each read's start time kept: a round that
      // began before its worker read the pause may still take a task, so the test waits for a read begun
      // after the pause, and for the round that read was for, before it enqueues the task that must wait.
      const readsStartedAt: number[] = [];
      const store = w.peer();
      const readPauses = store.claimControls.bind(store);
      store.claimControls = () => (readsStartedAt.push(Date.now()), readPauses());
      const worker = w.worker('w1', { store });
      const rounds: number[] = [];
      worker.events.on('claim:round', () => rounds.push(Date.now()));
      const stop = new AbortController();
      const run = worker.run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
      const statusOf = async (id: string) => (await w.store.get({ id })).status;
      const until = async (id: string, status: string) => {
        for (const end = Date.now() + 10_000; Date.now() < end; await sleep(20))
          if ((await statusOf(id)) === status) return;
        throw new Error(`${id} never reached ${status}: ${await statusOf(id)}`);
      };

      const running = (await w.submitter.enqueue({ type: 'demo.sleep', payload: { ms: 600 }, owner: 'o' }))
        .task;
      await until(running.id, TaskStatus.RUNNING);
      const pausedAt = Date.now();
      await w.store.setTypePaused({ type: 'demo.sleep', paused: true });
      for (let waited = 0; waited < 10_000; waited += 10) {
        const readAfter = readsStartedAt.find((t) => t > pausedAt);
        if (readAfter !== undefined && rounds.some((t) => t > readAfter)) break;
        await sleep(10);
      }
      const waiting = (await w.submitter.enqueue({ type: 'demo.sleep', payload: { ms: 1 }, owner: 'o' }))
        .task;
      const other = (await w.submitter.enqueue({ type: 'demo.echo', payload: { n: 1 }, owner: 'o' })).task;

      await until(other.id, TaskStatus.SUCCESS);
      await until(running.id, TaskStatus.SUCCESS);
      await sleep(w.config.pollIntervalMs * 10);
      expect(await w.store.get({ id: waiting.id })).toMatchObject({ status: TaskStatus.QUEUED, attempts: 0 });

      await w.store.setTypePaused({ type: 'demo.sleep', paused: false });
      await until(waiting.id, TaskStatus.SUCCESS);
      stop.abort();
      await run;
    },
  );
});

describe('a worker whose every type is paused', () => {
  it(
    'does not spin on due tasks it was offered: it leaves them to their promotion and sleeps between polls',
    { timeout: 30_000 },
    async () => {
      // A second between reads of the pauses, as deployed: a loop that came straight back would run that
      // whole second on its cached view without yielding.
      const w = await createWorkerWorld(server.endpoint, taskDefinitions, { pollIntervalMs: 1_000 });
      await w.store.setTypePaused({ type: 'demo.sleep', paused: true });
      const worker = new Worker({
        store: w.peer(),
        registry: w.registry,
        config: w.config,
        workerId: 'w-paused',
        types: ['demo.sleep'],
        logger: silentLogger(),
      });
      const stop = new AbortController();
      const run = worker.run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
      // A burst's entries, due now, as a kick would offer them.
      worker.offerDue([
        { id: 'due-1', dueAt: Date.now() - 10 },
        { id: 'due-2', dueAt: Date.now() - 10 },
      ]);
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 10);
      await sleep(300);
      clearInterval(ticker);
      stop.abort();
      await run;
      // A loop that never yields starves this timer (the review's repro: not one tick in 1.5 s).
      expect(ticks).toBeGreaterThanOrEqual(10);
    },
  );
});
