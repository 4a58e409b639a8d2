/** Demo task types: small, real handlers to try the queue with (registered in the catalog). */
import * as z from 'zod';
import { defineTask } from '../shared/tasks/define.js';

export const demoEcho = defineTask({
  name: 'demo.echo',
  schema: z.unknown(),
  handler: (payload) => payload,
});

export const demoSleep = defineTask({
  name: 'demo.sleep',
  schema: z
    .object({
      ms: z
        .number()
        .int()
        .min(0)
        .max(15 * 60_000),
    })
    .strict(),
  handler: async ({ ms }, ctx) => {
    const started = Date.now();
    // Sleeps in steps so progress shows and the abort signal is honoured promptly.
    while (Date.now() - started < ms) {
      ctx.signal.throwIfAborted();
      ctx.progress((Date.now() - started) / ms);
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, ms - (Date.now() - started))));
    }
    return { sleptMs: Date.now() - started };
  },
});

export const demoFail = defineTask({
  name: 'demo.fail',
  schema: z.object({ failTimes: z.number().int().min(0).max(100) }).strict(),
  handler: ({ failTimes }, ctx) => {
    if (ctx.attempt <= failTimes)
      throw new Error(`demo.fail: failing attempt ${ctx.attempt} of the first ${failTimes}`);
    return { succeededOnAttempt: ctx.attempt };
  },
});

/**
 * A long job: sleeps like demo.sleep under a timeout of its own, 4 minutes (a deployment with a shorter
 * maximum execution time runs it within that), so a worker may claim it through most of an invocation,
 * not only in its first seconds.
 */
export const demoReport = defineTask({
  name: 'demo.report',
  schema: z
    .object({
      ms: z
        .number()
        .int()
        .min(0)
        .max(15 * 60_000),
    })
    .strict(),
  timeoutMs: 240_000,
  handler: (payload, ctx) => demoSleep.handler(payload, ctx),
});

/**
 * A handler that stalls its process: on the listed attempts it waits `afterMs` (renewing its lease as
 * usual), then blocks the event loop for `blockMs`, as synchronous CPU work or a hung native call
 * would (no heartbeat, no abort, no drain gets through; Lambda kills the invocation at its timeout).
 * Other attempts succeed at once. Atomics.wait blocks without burning CPU.
 */
export const demoBlock = defineTask({
  name: 'demo.block',
  schema: z
    .object({
      afterMs: z
        .number()
        .int()
        .min(0)
        .max(15 * 60_000),
      blockMs: z
        .number()
        .int()
        .min(0)
        .max(15 * 60_000),
      attempts: z.array(z.number().int().min(1)).default([1]),
    })
    .strict(),
  handler: async ({ afterMs, blockMs, attempts }, ctx) => {
    if (!attempts.includes(ctx.attempt)) return { blocked: false, attempt: ctx.attempt };
    await new Promise((resolve) => setTimeout(resolve, afterMs));
    ctx.logger.warn('blocking the event loop', { blockMs });
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, blockMs);
    return { blocked: true, attempt: ctx.attempt };
  },
});

/**
 * A rate-limited type: returns its payload, at most 5 starts in any second across every worker
 * (defineTask's `rateLimit`). Enqueue 50 and they run over about ten seconds, none failed.
 */
export const demoLimited = defineTask({
  name: 'demo.limited',
  schema: z.unknown(),
  rateLimit: { limit: 5, intervalMs: 1_000 },
  handler: (payload) => payload,
});

/**
 * A parent: returns `{ sum }`, the sum of its children's `result.n` (children of a flow from POST /flows,
 * e.g. demo.echo tasks with payload `{ n }`); its payload is null or `{}`. With `{ spawn: [n, ...] }` and no children yet, it enqueues
 * one demo.echo child per number itself and waits for them (ctx.enqueueChildren, ctx.waitForChildren).
 */
export const demoSum = defineTask({
  name: 'demo.sum',
  schema: z
    .object({ spawn: z.array(z.number()).min(1).max(1000).optional() })
    .strict()
    .nullable(),
  handler: async (payload, ctx) => {
    if (ctx.children.length === 0 && payload?.spawn) {
      await ctx.enqueueChildren(payload.spawn.map((n) => ({ type: 'demo.echo', payload: { n } })));
      return ctx.waitForChildren();
    }
    let sum = 0;
    for (const child of ctx.children) {
      const n = (child.result as { n?: unknown } | undefined)?.n;
      if (typeof n === 'number') sum += n;
    }
    return { sum };
  },
});

/**
 * Durable steps: runs steps `a`, `b` and `c` (ctx.step), throwing once, on its first attempt only, right
 * after the step named by `failOnceAfter`. Returns the steps whose functions ran in its last attempt
 * (`executed`) and those it got from storage (`replayed`): after a failure after `b`, a and b replayed.
 */
export const demoSteps = defineTask({
  name: 'demo.steps',
  schema: z.object({ failOnceAfter: z.string().max(128) }).strict(),
  handler: async ({ failOnceAfter }, ctx) => {
    const names = ['a', 'b', 'c'];
    const executed: string[] = [];
    for (const name of names) {
      await ctx.step(name, () => {
        executed.push(name);
        return { step: name, attempt: ctx.attempt };
      });
      if (name === failOnceAfter && ctx.attempt === 1)
        throw new Error(`demo.steps: failing once, after step ${name}`);
    }
    return { executed, replayed: names.filter((n) => !executed.includes(n)) };
  },
});

export const demoTasks = [
  demoEcho,
  demoSleep,
  demoFail,
  demoReport,
  demoBlock,
  demoLimited,
  demoSum,
  demoSteps,
];
