/**
 * The kick on enqueue and the timekeeper in the deployed shape: the API function starts a worker
 * invocation through Lambda's Invoke (IAM-checked), and the holder of the fleet's seat 0 promotes a
 * delayed task when it falls due, without waiting for the scheduled tick or the recovery sweep.
 * Lenient bounds: the suite's other scenarios share the sim (and its two cores) meanwhile;
 * `npm run sim:latency` measures the figures on a sim of its own.
 */
import { describe, expect, it } from 'vitest';
import { accessRecords, api, waitFor } from './support/sim-client.js';

interface TaskJson {
  id: string;
  status: string;
  createdAt: string;
  availableAt: string;
  startedAt?: string;
}

const getTask = async (id: string) => (await api('GET', `/tasks/${id}`)).body.task as TaskJson;
const started = (id: string, timeoutMs: number) =>
  waitFor(
    `task ${id} started`,
    async () => {
      const t = await getTask(id);
      return t.startedAt ? t : undefined;
    },
    timeoutMs,
    100,
  );

describe('work starts without waiting for the scheduled tick', () => {
  it('a task enqueued through the API is started by the kick within seconds', async () => {
    const since = Date.now();
    const res = await api('POST', '/tasks', { type: 'demo.echo', payload: { kick: true } });
    expect(res.status).toBe(201);
    const task = await started(res.body.task.id, 20_000);
    // A tick comes once a minute: a start this soon is the kick's (or a worker already running).
    expect(Date.parse(task.startedAt!) - Date.parse(task.createdAt)).toBeLessThan(10_000);
    // The API's role started the worker function itself, and was allowed to.
    const invokes = (await accessRecords(since)).filter(
      (r) => r.action === 'lambda:InvokeFunction' && r.principalArn.includes('ApiRole'),
    );
    expect(invokes.length).toBeGreaterThanOrEqual(1);
    expect(invokes.every((r) => r.allowed && r.resource.includes('Worker'))).toBe(true);
  });

  // 71 s: past a tick and a sweep, beyond the 70 s kick horizon of old (review repro delayed-horizon.ts:
  // the kick was not sent, and the task started 47.5 s late, at a sweep).
  it.each([8, 71])(
    'a task delayed by %i s starts within a few seconds of its due time, not at the next tick or sweep',
    async (delaySeconds) => {
      const res = await api('POST', '/tasks', {
        type: 'demo.echo',
        payload: { delayed: delaySeconds },
        delaySeconds,
      });
      expect(res.status).toBe(201);
      const task = await started(res.body.task.id, delaySeconds * 1_000 + 60_000);
      const late = Date.parse(task.startedAt!) - Date.parse(task.availableAt);
      process.stdout.write(`FIGURE delayed ${delaySeconds} s, started after its due time: ${late} ms\n`);
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThan(5_000);
    },
  );
});
