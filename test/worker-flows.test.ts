/**
 * Flows and steps on running workers (real time, dynalite): a flow of demo.echo children under a
 * demo.sum parent sums their results, the parent's handler running once and after the last child; a
 * demo.sum that spawns its own children waits for them without holding its worker and runs again with
 * ctx.children; demo.steps replays the steps an earlier attempt stored and runs only the rest.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskStatus, type Task } from '../shared/task-model.js';
import * as z from 'zod';
import { taskDefinitions } from '../tasks/catalog.js';
import { defineTask } from '../shared/tasks/define.js';
import { ValidationError } from '../shared/errors.js';
import { childTaskId } from '../shared/ids.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, sleep, type WorkerWorld } from './support/worker-world.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

/** Runs two workers until `done`; the tasks then, and the ids of the handlers started, in order. */
async function runUntil(
  w: WorkerWorld,
  ids: string[],
  done: (tasks: Task[]) => boolean,
): Promise<{ tasks: Task[]; starts: string[] }> {
  const stop = new AbortController();
  const starts: string[] = [];
  const runs = ['w1', 'w2'].map((id) => {
    const store = w.peer();
    store.events.on('handler:start', ({ taskId }) => starts.push(taskId));
    return w.worker(id, { store }).run({ stop: stop.signal, idleStopMs: Number.POSITIVE_INFINITY });
  });
  let tasks: Task[] = [];
  for (const end = Date.now() + 20_000; Date.now() < end; await sleep(50)) {
    tasks = await Promise.all(ids.map((id) => w.store.get({ id })));
    if (done(tasks)) break;
  }
  stop.abort();
  await Promise.all(runs);
  return { tasks, starts };
}

describe('flows and steps on running workers', () => {
  it('a flow’s parent sums its children once, after the last ends', { timeout: 30_000 }, async () => {
    const w = await createWorkerWorld(server.endpoint, taskDefinitions);
    const flow = await w.store.enqueueFlow({
      owner: 'o',
      root: {
        task: { type: 'demo.sum', payload: null },
        children: [1, 2, 3, 4].map((n) => ({ task: { type: 'demo.echo', payload: { n } } })),
      },
    });
    const childIds = flow.ids.children!.map((c) => c.id);
    const { tasks, starts } = await runUntil(
      w,
      [flow.task.id, ...childIds],
      ([p]) => p!.status === TaskStatus.SUCCESS,
    );
    const [parent, ...children] = tasks;
    expect(parent!.status).toBe(TaskStatus.SUCCESS);
    expect(parent!.result).toEqual({ sum: 10 });
    expect(starts.filter((id) => id === flow.task.id)).toHaveLength(1);
    expect(parent!.attempts).toBe(1);
    expect(children.map((c) => c.status)).toEqual(childIds.map(() => TaskStatus.SUCCESS));
    // It started after its last child finished.
    expect(parent!.startedAt).toBeGreaterThanOrEqual(Math.max(...children.map((c) => c.finishedAt!)));
  });

  it(
    'a handler that enqueues children waits for them, then runs again with ctx.children',
    { timeout: 30_000 },
    async () => {
      const w = await createWorkerWorld(server.endpoint, taskDefinitions);
      const { task } = await w.submitter.enqueue({
        type: 'demo.sum',
        owner: 'o',
        payload: { spawn: [5, 6, 7] },
      });
      const {
        tasks: [parent],
        starts,
      } = await runUntil(w, [task.id], ([p]) => p!.status === TaskStatus.SUCCESS);
      expect(parent!.result).toEqual({ sum: 18 });
      expect(parent!.children).toEqual({ total: 3, pending: 0 });
      // Twice: once to spawn, once to sum; the wait spent no attempt.
      expect(starts.filter((id) => id === task.id)).toHaveLength(2);
      expect(parent!.attempts).toBe(1);
    },
  );

  it(
    'demo.steps replays the steps its failed attempt stored, and runs only the rest',
    { timeout: 30_000 },
    async () => {
      const w = await createWorkerWorld(server.endpoint, taskDefinitions);
      const { task } = await w.submitter.enqueue({
        type: 'demo.steps',
        owner: 'o',
        payload: { failOnceAfter: 'b' },
      });
      const {
        tasks: [done],
      } = await runUntil(w, [task.id], ([t]) => t!.status === TaskStatus.SUCCESS);
      expect(done!.attempts).toBe(2);
      expect(done!.result).toEqual({ executed: ['c'], replayed: ['a', 'b'] });
      const steps = await w.store.readSteps(task);
      expect([...steps.keys()].sort()).toEqual(['a', 'b', 'c']);
      expect(JSON.parse(steps.get('a')!.result)).toEqual({ step: 'a', attempt: 1 });
      expect(JSON.parse(steps.get('c')!.result)).toEqual({ step: 'c', attempt: 2 });
    },
  );

  it(
    'an attempt that died before it waited is retried without its unfinished children, and meets them again',
    { timeout: 30_000 },
    async () => {
      const seen: { attempt: number; children: number }[] = [];
      const spawner = defineTask({
        name: 'test.spawner',
        schema: z.unknown(),
        maxAttempts: 5,
        handler: async (_payload, ctx) => {
          seen.push({ attempt: ctx.attempt, children: ctx.children.length });
          if (ctx.children.length > 0) return { statuses: ctx.children.map((c) => c.status) };
          // Two calls at once: each numbers its children after the other's.
          await Promise.all([
            ctx.enqueueChildren([{ type: 'demo.echo', payload: { n: 1 } }]),
            ctx.enqueueChildren([{ type: 'demo.echo', payload: { n: 2 } }]),
          ]);
          if (ctx.attempt === 1) throw new Error('dies before it waits');
          return ctx.waitForChildren();
        },
      });
      const w = await createWorkerWorld(server.endpoint, [...taskDefinitions, spawner]);
      const { task } = await w.submitter.enqueue({ type: 'test.spawner', owner: 'o', payload: null });
      const {
        tasks: [parent],
      } = await runUntil(w, [task.id], ([p]) => p!.status === TaskStatus.SUCCESS);
      expect(parent!.result).toEqual({ statuses: ['SUCCESS', 'SUCCESS'] });
      expect(parent!.children).toEqual({ total: 2, pending: 0 });
      // The retried attempt saw no children (the first one's round was never waited for) and enqueued
      // the same two again; the run after the wait saw both ended.
      expect(seen).toEqual([
        { attempt: 1, children: 0 },
        { attempt: 2, children: 0 },
        { attempt: 2, children: 2 },
      ]);
    },
  );

  it(
    'a wait after a replayed step that enqueued the children: the earlier attempt’s children are waited for',
    { timeout: 30_000 },
    async () => {
      const stepper = defineTask({
        name: 'test.stepper',
        schema: z.unknown(),
        maxAttempts: 5,
        handler: async (_payload, ctx) => {
          if (ctx.children.length > 0) return { children: ctx.children.map((c) => c.status) };
          // A child whose payload is left out is checked as null (demo.sum takes null).
          await ctx.step('spawn', () =>
            ctx.enqueueChildren([{ type: 'demo.echo', payload: { n: 1 } }, { type: 'demo.sum' }]),
          );
          if (ctx.attempt === 1) throw new Error('dies after its step, before it waits');
          return ctx.waitForChildren();
        },
      });
      const w = await createWorkerWorld(server.endpoint, [...taskDefinitions, stepper]);
      const { task } = await w.submitter.enqueue({ type: 'test.stepper', owner: 'o', payload: null });
      const {
        tasks: [parent],
      } = await runUntil(w, [task.id], ([p]) => p!.status === TaskStatus.SUCCESS);
      expect(parent!.result).toEqual({ children: ['SUCCESS', 'SUCCESS'] });
      expect(parent!.children).toEqual({ total: 2, pending: 0 });
      expect(parent!.attempts).toBe(2);
    },
  );
  it(
    'children from a handler are checked as enqueued tasks are: each bad one named, nothing written',
    { timeout: 30_000 },
    async () => {
      const refusals: unknown[] = [];
      const checker = defineTask({
        name: 'test.checker',
        schema: z.unknown(),
        maxAttempts: 1,
        handler: async (_payload, ctx) => {
          try {
            await ctx.enqueueChildren([
              { type: 'demo.echo', payload: { n: 1 } },
              { type: 'demo.report', payload: { ms: 1 }, timeoutMs: 240_001 },
              { type: 'demo.nope' },
              { type: 'demo.sleep', payload: { ms: 'long' } },
            ]);
          } catch (error) {
            refusals.push(error);
          }
          return { children: ctx.children.length };
        },
      });
      const w = await createWorkerWorld(server.endpoint, [...taskDefinitions, checker]);
      const { task } = await w.submitter.enqueue({ type: 'test.checker', owner: 'o', payload: null });
      const {
        tasks: [parent],
      } = await runUntil(w, [task.id], ([p]) => p!.status === TaskStatus.SUCCESS);
      expect(refusals).toHaveLength(1);
      const refusal = refusals[0] as ValidationError;
      expect(refusal).toBeInstanceOf(ValidationError);
      expect(refusal.code).toBe('VALIDATION_FAILED');
      expect(refusal.problems.map((p) => p.path)).toEqual(['1.timeoutMs', '2.type', '3.payload.ms']);
      expect(refusal.problems[0]!.message).toMatch(
        /^must be at most \d+ ms, the timeout of task type demo\.report$/,
      );
      // Nothing was written: no count raised on the parent, no child put.
      expect(parent!.children).toBeUndefined();
      for (const i of [0, 1])
        await expect(w.store.get({ id: childTaskId(task.id, i) })).rejects.toMatchObject({
          code: 'TASK_NOT_FOUND',
        });
    },
  );
});
