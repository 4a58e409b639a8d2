/**
 * Groups on two real workers on dynalite, through the submitter as the API enqueues: demo.sleep tasks
 * of one group run one after another (their runs, from startedAt to finishedAt, never overlap), a task
 * of another group and an ungrouped one run beside the first, and all succeed on their first attempt.
 * The workers learn that demo.sleep has grouped tasks from the type controls, as deployed ones do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskStatus, type Task } from '../shared/task-model.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, sleep } from './support/worker-world.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const overlaps = (a: Task, b: Task) => a.startedAt! < b.finishedAt! && b.startedAt! < a.finishedAt!;

describe('grouped demo.sleep tasks on running workers', () => {
  it('runs a group one at a time, and other work beside it', { timeout: 30_000 }, async () => {
    const w = await createWorkerWorld(server.endpoint, taskDefinitions);
    const enqueue = async (group?: string) =>
      (
        await w.submitter.enqueue({
          type: 'demo.sleep',
          payload: { ms: 500 },
          owner: 'o',
          ...(group ? { group } : {}),
        })
      ).task.id;
    const serial = [await enqueue('customer-1'), await enqueue('customer-1'), await enqueue('customer-1')];
    const beside = [await enqueue('customer-2'), await enqueue()];
    const stop = new AbortController();
    const runs = ['w1', 'w2'].map((id) =>
      w.worker(id).run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY }),
    );
    const all = [...serial, ...beside];
    const tasks = async () => Promise.all(all.map((id) => w.store.get({ id })));
    for (const end = Date.now() + 20_000; Date.now() < end; await sleep(50))
      if ((await tasks()).every((t) => t.status === TaskStatus.SUCCESS)) break;
    stop.abort();
    await Promise.all(runs);

    const done = await tasks();
    expect(done.map((t) => [t.status, t.attempts])).toEqual(all.map(() => [TaskStatus.SUCCESS, 1]));
    const [a1, a2, a3, b, plain] = done as [Task, Task, Task, Task, Task];
    expect(a1.group).toBe('customer-1');
    // One at a time, in claim order.
    expect([overlaps(a1, a2), overlaps(a2, a3), overlaps(a1, a3)]).toEqual([false, false, false]);
    expect(a1.startedAt! < a2.startedAt! && a2.startedAt! < a3.startedAt!).toBe(true);
    // The other group and the ungrouped task did not wait for the first group.
    expect(overlaps(a1, b)).toBe(true);
    expect(overlaps(a1, plain)).toBe(true);
  });
});
