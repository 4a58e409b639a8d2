/**
 * A rate limit in the deployed shape: demo.limited (5 starts in any second) enqueued in six signed
 * batches a moment apart, so several worker invocations (one per kick) claim it at once. Every task
 * succeeds at its first attempt, the starts never pass 5 in any second (from each task's `startedAt`),
 * and the 30 take the six seconds the limit allows, not less.
 */
import { describe, expect, it } from 'vitest';
import { mostStartsInWindow } from '../support/rate-window.js';
import { api, fn, simState, sleep, waitFor } from './support/sim-client.js';

describe('a rate-limited type across worker invocations', () => {
  it('holds 5 starts a second while several invocations claim it', { timeout: 180_000 }, async () => {
    const began = Date.now();
    const ids: string[] = [];
    for (let batch = 0; batch < 6; batch++) {
      const tasks = Array.from({ length: 5 }, (_, i) => ({ type: 'demo.limited', payload: { batch, i } }));
      const answer = await api('POST', '/tasks/batch', { tasks }, 'producer');
      expect(answer.status).toBe(200);
      ids.push(...(answer.body.results as { task: { id: string } }[]).map((r) => r.task.id));
      await sleep(400);
    }
    const done = await waitFor(
      'the 30 rate-limited tasks to succeed',
      async () => {
        const tasks = await Promise.all(
          ids.map(async (id) => (await api('GET', `/tasks/${id}`, undefined, 'producer')).body.task),
        );
        return tasks.every((t) => t.status === 'SUCCESS') ? tasks : undefined;
      },
      150_000,
    );
    expect(done.map((t) => t.attempts)).toEqual(ids.map(() => 1));
    const starts = done.map((t) => Date.parse(t.startedAt));
    expect(mostStartsInWindow(starts, 1_000)).toBeLessThanOrEqual(5);
    expect(Math.max(...starts) - Math.min(...starts)).toBeGreaterThanOrEqual(5_000);
    // More than one worker invocation ran in that time (each batch's kick starts one).
    const worker = fn(await simState(), 'Worker');
    expect(worker.recent.filter((r) => r.startedAt >= began).length).toBeGreaterThanOrEqual(2);
  });
});
