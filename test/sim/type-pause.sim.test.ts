/**
 * Pause and resume in the deployed shape: the routes are an operator's (the construct's grantOperate):
 * API Gateway refuses them to a producer whose policy names the other routes (403), and grants them to
 * the operator, whose policy names only those two. A paused type's task is enqueued and waits through
 * worker invocations (no attempt spent); resume kicks a worker, which runs it.
 */
import { describe, expect, it } from 'vitest';
import { api, sleep, waitFor } from './support/sim-client.js';

const TYPE = 'demo.fail';
const typeOf = async (as: string) =>
  (
    (await api('GET', '/types', undefined, as)).body as { types: { type: string; paused: boolean }[] }
  ).types.find((t) => t.type === TYPE);

describe('pause and resume a type through the signed API', () => {
  it(
    'are the operator’s: a producer gets 403 and the operator pauses, then resumes',
    { timeout: 120_000 },
    async () => {
      expect(await api('POST', `/types/${TYPE}/pause`, undefined, 'producer')).toMatchObject({
        status: 403,
        body: { message: 'Forbidden' },
      });
      // The operator's grant is pause and resume only.
      expect((await api('GET', '/tasks', undefined, 'operator')).status).toBe(403);
      expect(await typeOf('producer')).toMatchObject({ paused: false });

      const paused = await api('POST', `/types/${TYPE}/pause`, undefined, 'operator');
      expect(paused.status).toBe(200);
      expect(paused.body.type).toMatchObject({
        type: TYPE,
        paused: true,
        changedBy: expect.stringContaining('sim-operator'),
      });
      expect(await typeOf('producer')).toMatchObject({ paused: true });
      // Workers read the pause within this long; a round begun before finishes (its requests bounded by
      // the worker's 5 s request deadline, most in milliseconds): the task is enqueued after both.
      await sleep(paused.body.takesEffectWithinMs + 5_000);

      const created = await api('POST', '/tasks', { type: TYPE, payload: { failTimes: 0 } }, 'producer');
      expect(created.status).toBe(201);
      const id = created.body.task.id as string;
      // No kick is sent for it (its type is paused), and workers started for other work leave it: it
      // stays queued, no attempt spent.
      await sleep(8_000);
      expect((await api('GET', `/tasks/${id}`, undefined, 'producer')).body.task).toMatchObject({
        status: 'QUEUED',
        attempts: 0,
      });

      const resumed = await api('POST', `/types/${TYPE}/resume`, undefined, 'operator');
      expect(resumed.body.type).toMatchObject({ paused: false });
      // The resume's kick starts a worker for it: well before the next scheduled tick, a minute apart.
      const done = await waitFor(
        'the resumed type’s task to succeed',
        async () => {
          const { task } = (await api('GET', `/tasks/${id}`, undefined, 'producer')).body;
          return task.status === 'SUCCESS' ? task : undefined;
        },
        45_000,
      );
      expect(done).toMatchObject({ attempts: 1, result: { succeededOnAttempt: 1 } });
    },
  );
});
