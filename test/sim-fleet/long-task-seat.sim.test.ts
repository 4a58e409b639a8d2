/**
 * A long task holds no seat (the review's HIGH-2): with a cap of one seat, a 200 s task runs on the only
 * invocation; that invocation can claim a type without its own timeout only in its first minute (its
 * claim window), then gives its seat away while the task runs. Short tasks enqueued 70 s after the long
 * one start within 5 s: through a kick into the freed seat, not the next tick or the long task's end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOwnSim, type OwnSim } from './own-sim.js';
import { sleep, waitFor } from '../sim/support/sim-client.js';

interface TaskJson {
  id: string;
  status: string;
  createdAt: string;
  startedAt?: string;
  leaseOwner?: string;
}

let own: OwnSim;
beforeAll(async () => {
  own = await startOwnSim('long-task-seat', { context: { 'leasehold:workerMaxConcurrency': '1' } });
});
afterAll(() => own?.close());

const getTask = async (id: string) => (await own.api('GET', `/tasks/${id}`)).body.task as TaskJson;

describe('a cap of one seat and a 200 s task', () => {
  it('short tasks enqueued 70 s later start within 5 s, beside the long task', async () => {
    const long = (await own.api('POST', '/tasks', { type: 'demo.sleep', payload: { ms: 200_000 } })).body
      .task as TaskJson;
    const running = await waitFor(
      'the long task running',
      async () => {
        const t = await getTask(long.id);
        return t.status === 'RUNNING' ? t : undefined;
      },
      90_000,
      500,
    );
    await sleep(Math.max(0, Date.parse(running.startedAt!) + 70_000 - Date.now()));
    const shorts: TaskJson[] = [];
    for (let i = 0; i < 3; i++) {
      // demo.echo has no timeout of its own: the long task's invocation, past its claim window, cannot take it.
      const answer = await own.api('POST', '/tasks', { type: 'demo.echo', payload: { i } });
      expect(answer.status).toBe(201);
      shorts.push(answer.body.task as TaskJson);
      await sleep(1_000);
    }
    const started = await Promise.all(
      shorts.map((s) =>
        waitFor(
          `short task ${s.id} started`,
          async () => {
            const t = await getTask(s.id);
            return t.startedAt ? t : undefined;
          },
          60_000,
          250,
        ),
      ),
    );
    const waits = started.map((t) => Date.parse(t.startedAt!) - Date.parse(t.createdAt));
    const longNow = await getTask(long.id);
    process.stdout.write(
      `FIGURE long task on a cap of 1: short tasks enqueued 70 s in started after ${waits.join(', ')} ms; the long task ${longNow.status}\n`,
    );
    // The long task still runs: the short ones did not wait for it.
    expect(longNow.status).toBe('RUNNING');
    for (const wait of waits) expect(wait).toBeLessThanOrEqual(5_000);
  });
});
