/**
 * An invocation running a long task past its claim window holds no seat and claims nothing: the next
 * task, even of a type with its own long timeout (demo.report: 4 minutes) that the old design let the
 * long-lived invocation claim late, starts at once in an invocation that can take every type. The
 * keeper task is demo.sleep (no timeout of its own, so 300 s): its invocation's window for it closes
 * after about a minute, and from then on it only drains. The probes are due at once: the kick that
 * starts an invocation for each (the keeper's holds no seat) hands it the task by key. (Probes delayed
 * by a second, as the earlier version sent them, depend on whichever invocation keeps time then; in a
 * CI run one started 17 s late, the delayed-task path issue 29 gives a single promotion owner.)
 */
import { describe, expect, it } from 'vitest';
import { api, sleep, waitFor } from './support/sim-client.js';

interface TaskJson {
  id: string;
  status: string;
  createdAt: string;
  availableAt: string;
  startedAt?: string;
  leaseOwner?: string;
}
const getTask = async (id: string) => (await api('GET', `/tasks/${id}`)).body.task as TaskJson;

describe('a long task past its invocation’s claim window', () => {
  it('leaves the next tasks, of a long-timeout type too, to an invocation that starts them at once', async () => {
    const keeper = (await api('POST', '/tasks', { type: 'demo.sleep', payload: { ms: 170_000 } })).body
      .task as TaskJson;
    const running = await waitFor(
      'the keeper running',
      async () => {
        const t = await getTask(keeper.id);
        return t.status === 'RUNNING' && t.leaseOwner ? t : undefined;
      },
      150_000,
      500,
    );
    const since = Date.parse(running.startedAt!);
    await sleep(Math.max(0, since + 75_000 - Date.now()));
    const waits: number[] = [];
    for (let probe = 0; probe < 3; probe++) {
      const report = (await api('POST', '/tasks', { type: 'demo.report', payload: { ms: 4_000 } })).body
        .task as TaskJson;
      const claimed = await waitFor(
        'demo.report claimed',
        async () => {
          const t = await getTask(report.id);
          return t.startedAt ? t : undefined;
        },
        70_000,
        200,
      );
      // Claimed by an invocation that can still take every type, not the keeper's (it claims nothing now).
      expect(claimed.leaseOwner).not.toBe(running.leaseOwner);
      waits.push(Date.parse(claimed.startedAt!) - Date.parse(claimed.availableAt));
    }
    process.stdout.write(
      `FIGURE long-timeout type enqueued ${Math.round((Date.now() - since) / 1000)} s into a long task's invocation: started ${waits.join(', ')} ms after its due time\n`,
    );
    for (const wait of waits) expect(wait).toBeLessThan(5_000);
    expect((await getTask(keeper.id)).status).toBe('RUNNING');
  });
});
