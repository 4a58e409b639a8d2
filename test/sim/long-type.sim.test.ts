/**
 * A task type with its own long timeout (demo.report: 4 minutes) is claimed by a worker invocation well
 * into its life, not only in its first seconds (with the old sizing, 320 s, an
 * invocation could claim it only in its first minute; with 380 s, for its first two).
 * The probes are delayed by a second: a task due at once is kicked to a fresh invocation, which then
 * usually wins it; a delayed one is promoted by the timekeeper (the invocation holding seat 0), whose
 * worker hears the promotion in-process and claims at once. The keeper task is delayed the same way, so
 * the invocation that runs it is usually the one keeping time, and it keeps seat 0 while it runs: the
 * probes are then its own (the loop of probes covers one that went elsewhere). Due at once, the keeper
 * went to a kicked invocation, which in the whole suite, beside other scenarios' long-lived
 * invocations, did not always hold seat 0.
 */
import { describe, expect, it } from 'vitest';
import { api, simState, sleep, waitFor } from './support/sim-client.js';

interface TaskJson {
  id: string;
  status: string;
  createdAt: string;
  availableAt: string;
  startedAt?: string;
  leaseOwner?: string;
}
const getTask = async (id: string) => (await api('GET', `/tasks/${id}`)).body.task as TaskJson;

describe('a type with its own long timeout', () => {
  it('is claimed at once by an invocation that has been running for more than a minute', async () => {
    const keeper = (
      await api('POST', '/tasks', { type: 'demo.sleep', payload: { ms: 170_000 }, delaySeconds: 1 })
    ).body.task as TaskJson;
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
    // Probe until one report is claimed by the keeper's invocation (a fresh tick's invocation may win a probe).
    for (let probe = 0; probe < 6; probe++) {
      const report = (
        await api('POST', '/tasks', { type: 'demo.report', payload: { ms: 4_000 }, delaySeconds: 1 })
      ).body.task as TaskJson;
      const claimed = await waitFor(
        'demo.report claimed',
        async () => {
          const t = await getTask(report.id);
          return t.status === 'RUNNING' ? t : undefined;
        },
        70_000,
        200,
      );
      const age = Date.parse(claimed.startedAt!) - since;
      if (claimed.leaseOwner === running.leaseOwner) {
        expect(age).toBeGreaterThan(60_000);
        expect(Date.parse(claimed.startedAt!) - Date.parse(claimed.availableAt)).toBeLessThan(5_000);
        process.stdout.write(
          `FIGURE long-timeout type claimed ${Math.round(age / 1000)} s into an invocation, ${Date.parse(claimed.startedAt!) - Date.parse(claimed.availableAt)} ms after its due time\n`,
        );
        return;
      }
      await sleep(5_000);
    }
    const worker = Object.entries((await simState()).functions).find(([id]) => id.startsWith('Worker'))![1];
    throw new Error(
      `no demo.report was claimed by the running invocation in 6 probes (worker invocations: ${worker.invocations})`,
    );
  });
});
