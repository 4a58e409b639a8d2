/**
 * demo.limited (5 starts in any second) on two real workers on dynalite: 15 tasks all succeed, none
 * failed or retried for waiting, their starts never more than 5 in any second (from each task's
 * `startedAt`), and the workers look again when the next start frees rather than at their idle pace,
 * so the 15 take about two seconds, not more.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskStatus } from '../shared/task-model.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, sleep } from './support/worker-world.js';
import { mostStartsInWindow } from './support/rate-window.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

describe('a rate-limited type on running workers', () => {
  it(
    'runs 15 at 5 a second across two workers, none failed, no window over the limit',
    { timeout: 30_000 },
    async () => {
      const w = await createWorkerWorld(server.endpoint, taskDefinitions);
      const stop = new AbortController();
      const runs = ['w1', 'w2'].map((id) =>
        w.worker(id).run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY }),
      );
      const ids: string[] = [];
      for (let i = 0; i < 15; i++)
        ids.push((await w.submitter.enqueue({ type: 'demo.limited', payload: { i }, owner: 'o' })).task.id);
      const tasks = async () => Promise.all(ids.map((id) => w.store.get({ id })));
      const began = Date.now();
      for (const end = began + 20_000; Date.now() < end; await sleep(50))
        if ((await tasks()).every((t) => t.status === TaskStatus.SUCCESS)) break;
      const took = Date.now() - began;
      stop.abort();
      await Promise.all(runs);

      const done = await tasks();
      expect(done.map((t) => [t.status, t.attempts])).toEqual(ids.map(() => [TaskStatus.SUCCESS, 1]));
      expect(
        mostStartsInWindow(
          done.map((t) => t.startedAt!),
          1_000,
        ),
      ).toBeLessThanOrEqual(5);
      // Three windows: the first five at once, the next five a second later, the last a second after.
      expect(took).toBeGreaterThanOrEqual(1_900);
      expect(took).toBeLessThan(6_000);
    },
  );
});
