/**
 * Groups and debounce in the deployed shape (index lag, the IAM gate and the API's kicks on): demo.sleep
 * tasks of one group, enqueued in signed batches so several worker invocations claim at once, run one
 * at a time (their runs never overlap) while another group's run beside them; and three debounced
 * enqueues of one key make one task, which runs once with the last payload.
 */
import { describe, expect, it } from 'vitest';
import { api, sleep, waitFor } from './support/sim-client.js';

interface TaskJson {
  id: string;
  status: string;
  attempts: number;
  startedAt: string;
  finishedAt: string;
  group?: string;
  result?: unknown;
}

const overlaps = (a: TaskJson, b: TaskJson) =>
  Date.parse(a.startedAt) < Date.parse(b.finishedAt) && Date.parse(b.startedAt) < Date.parse(a.finishedAt);

const allDone = (ids: string[], what: string) =>
  waitFor(
    what,
    async () => {
      const tasks = await Promise.all(
        ids.map(
          async (id) => (await api('GET', `/tasks/${id}`, undefined, 'producer')).body.task as TaskJson,
        ),
      );
      return tasks.every((t) => t.status === 'SUCCESS') ? tasks : undefined;
    },
    150_000,
  );

describe('groups and debounce across worker invocations', () => {
  it('runs a group one at a time while another group runs beside it', { timeout: 180_000 }, async () => {
    const run = Date.now();
    const ids: string[] = [];
    for (let batch = 0; batch < 3; batch++) {
      const tasks = ['serial', 'serial', 'other'].map((group) => ({
        type: 'demo.sleep',
        payload: { ms: 400 },
        group: `${group}-${run}`,
      }));
      const answer = await api('POST', '/tasks/batch', { tasks }, 'producer');
      expect(answer.status).toBe(200);
      ids.push(...(answer.body.results as { task: { id: string } }[]).map((r) => r.task.id));
      await sleep(200);
    }
    const done = await allDone(ids, 'the 9 grouped tasks to succeed');
    expect(done.map((t) => t.attempts)).toEqual(ids.map(() => 1));
    const serial = done.filter((t) => t.group === `serial-${run}`);
    const other = done.filter((t) => t.group === `other-${run}`);
    expect([serial.length, other.length]).toEqual([6, 3]);
    for (const a of serial) for (const b of serial) if (a !== b) expect(overlaps(a, b)).toBe(false);
    for (const a of other) for (const b of other) if (a !== b) expect(overlaps(a, b)).toBe(false);
    // The other group did not wait for the serial group's six.
    expect(other.some((o) => serial.some((s) => overlaps(o, s)))).toBe(true);
  });

  it(
    'collapses three debounced enqueues into one run with the last payload',
    { timeout: 120_000 },
    async () => {
      const key = `sim-${Date.now()}`;
      const answers = [];
      for (const n of [1, 2, 3]) {
        answers.push(
          await api(
            'POST',
            '/tasks',
            { type: 'demo.echo', payload: { n }, debounce: { key, windowMs: 2_000 } },
            'producer',
          ),
        );
        await sleep(300);
      }
      expect(answers.map((a) => a.status)).toEqual([201, 200, 200]);
      expect(answers.map((a) => a.body.joined === true)).toEqual([false, true, true]);
      const id = answers[0]!.body.task.id as string;
      expect(new Set(answers.map((a) => a.body.task.id))).toEqual(new Set([id]));
      const [task] = await allDone([id], 'the debounced task to succeed');
      expect(task!.attempts).toBe(1);
      expect(task!.result).toEqual({ n: 3 });
    },
  );
});
