/**
 * Flows in the deployed shape (index lag, throttling, the IAM gate and recursion detection on): a flow
 * of 100 children sent to POST /flows completes across several worker invocations, its parent's
 * handler runs once, after the last child ended (no invocation waited for them); and a demo.sum that
 * enqueues its own children from its handler (the worker's PutItem and BatchGetItem) sums them.
 */
import { describe, expect, it } from 'vitest';
import { api, fn, functionDenials, simState, waitFor } from './support/sim-client.js';

interface TaskJson {
  id: string;
  status: string;
  attempts: number;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  parentId?: string;
  children?: { total: number; pending: number };
  result?: unknown;
}

const getTask = async (id: string) =>
  (await api('GET', `/tasks/${id}`, undefined, 'producer')).body.task as TaskJson;
const until = (id: string, status: string, timeoutMs: number) =>
  waitFor(
    `task ${id} ${status}`,
    async () => {
      const task = await getTask(id);
      return task.status === status ? task : undefined;
    },
    timeoutMs,
    1_000,
  );

describe('flows across worker invocations', () => {
  it(
    'a flow of 100 children completes; its parent runs once, after the last child',
    { timeout: 240_000 },
    async () => {
      const before = fn(await simState(), 'Worker').invocations;
      // Half echo their n (the parent sums them), half sleep a little, so the children span invocations.
      const children = Array.from({ length: 100 }, (_, i) =>
        i % 2 === 0 ? { type: 'demo.echo', payload: { n: i } } : { type: 'demo.sleep', payload: { ms: 300 } },
      );
      const answer = await api(
        'POST',
        '/flows',
        { task: { type: 'demo.sum', payload: null }, children },
        'producer',
      );
      expect(answer.status).toBe(201);
      const ids = (answer.body.ids.children as { id: string }[]).map((c) => c.id);
      expect(ids).toHaveLength(100);
      expect(answer.body.task.status).toBe('WAITING_CHILDREN');

      const parent = await until(answer.body.id as string, 'SUCCESS', 200_000);
      const expected = children.reduce((sum, c) => sum + ((c.payload as { n?: number }).n ?? 0), 0);
      expect(parent.result).toEqual({ sum: expected });
      expect(parent.children).toEqual({ total: 100, pending: 0 });
      // One attempt of the parent: a second start (a claim recovered, a run repeated) would be a second.
      expect(parent.attempts).toBe(1);
      // One at a time: the sim's API Gateway throttles a burst of 100 reads as the real one may.
      const done: TaskJson[] = [];
      for (const id of ids) done.push(await getTask(id));
      expect(done.map((c) => c.status)).toEqual(ids.map(() => 'SUCCESS'));
      expect(done.every((c) => c.parentId === parent.id)).toBe(true);
      // Started after the last child ended: no invocation held the parent while its children ran.
      const lastEnd = Math.max(...done.map((c) => Date.parse(c.finishedAt!)));
      expect(Date.parse(parent.startedAt!)).toBeGreaterThanOrEqual(lastEnd);
      const firstStart = Math.min(...done.map((c) => Date.parse(c.startedAt!)));
      process.stdout.write(
        `FIGURE flow of 100: children ran ${firstStart - Date.parse(parent.createdAt)}..${lastEnd - Date.parse(parent.createdAt)} ms after the enqueue, the parent started ${Date.parse(parent.startedAt!) - lastEnd} ms after the last\n`,
      );
      const state = await simState();
      expect(fn(state, 'Worker').invocations - before).toBeGreaterThanOrEqual(2);
      expect(functionDenials(state)).toEqual([]);
    },
  );

  it('a handler enqueues its children and waits for them, then sums them', { timeout: 240_000 }, async () => {
    const answer = await api(
      'POST',
      '/tasks',
      { type: 'demo.sum', payload: { spawn: [1, 2, 3, 4] } },
      'producer',
    );
    expect(answer.status).toBe(201);
    const parent = await until(answer.body.task.id as string, 'SUCCESS', 200_000);
    expect(parent.result).toEqual({ sum: 10 });
    expect(parent.children).toEqual({ total: 4, pending: 0 });
    // The wait gave its attempt back.
    expect(parent.attempts).toBe(1);
    expect(functionDenials(await simState())).toEqual([]);
  });
});
