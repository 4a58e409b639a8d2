/** Demo task types: small, real handlers to try the queue with (registered in the catalog). */
import * as z from 'zod';
import { defineTask } from './define.js';

export const demoEcho = defineTask({
  name: 'demo.echo',
  schema: z.unknown(),
  handler: (payload) => payload,
});

export const demoSleep = defineTask({
  name: 'demo.sleep',
  schema: z.object({ ms: z.number().int().min(0).max(15 * 60_000) }).strict(),
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
    if (ctx.attempt <= failTimes) throw new Error(`demo.fail: failing attempt ${ctx.attempt} of the first ${failTimes}`);
    return { succeededOnAttempt: ctx.attempt };
  },
});

export const demoTasks = [demoEcho, demoSleep, demoFail];
