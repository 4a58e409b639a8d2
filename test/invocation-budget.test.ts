import { describe, expect, it } from 'vitest';
import { defineConfig } from '../shared/config.js';
import {
  canStartWithin,
  effectiveTimeoutMs,
  LAMBDA_MAX_TIMEOUT_MS,
  typeTimeoutMs,
  WORKER_CLAIM_WINDOW_MS,
  workerInvocationTimeoutMs,
  workerTimeoutProblem,
} from '../shared/invocation-budget.js';
import { sizeFunctions } from '../cdk/sizing.js';
import * as z from 'zod';
import { defineTask } from '../shared/tasks/define.js';
import { TaskRegistry } from '../shared/tasks/registry.js';

const defaults = defineConfig();

/** The last instant (from its start, in 100 ms steps) an invocation of the given timeout can claim a type of timeout T. */
function claimWindowMs(invocationMs: number, typeTimeout: number, startupMs: number): number {
  let claimable = 0;
  for (let elapsed = startupMs; elapsed < invocationMs; elapsed += 100) {
    if (!canStartWithin(invocationMs - elapsed, typeTimeout, defaults)) break;
    claimable = elapsed;
  }
  return claimable;
}

describe('the worker claim rule and the Lambda sizing agree', () => {
  it('the synthesized worker timeout leaves every type claimable for at least one schedule period after a slow cold start', () => {
    const timeout = sizeFunctions(defaults).workerTimeoutMs;
    expect(timeout).toBe(workerInvocationTimeoutMs(defaults));
    expect(timeout).toBe(380_000);
    // getRemainingTimeInMillis() starts just below the timeout; allow a 2 s init as margin.
    const longest = typeTimeoutMs(undefined, defaults); // the demo types declare no timeout of their own
    expect(longest).toBe(defaults.maxExecutionMs);
    expect(canStartWithin(timeout - 2_000, longest, defaults)).toBe(true);
    expect(claimWindowMs(timeout, longest, 2_000)).toBeGreaterThanOrEqual(WORKER_CLAIM_WINDOW_MS);
    // The earlier sizing (timeout = max execution + drain) never claimed such a type at all.
    expect(canStartWithin(defaults.maxExecutionMs + defaults.drainMarginMs - 3, longest, defaults)).toBe(
      false,
    );
  });

  it('a type with its own long timeout is claimable through most of an invocation, a short one almost to the drain', () => {
    const timeout = sizeFunctions(defaults).workerTimeoutMs;
    expect(claimWindowMs(timeout, 120_000, 0)).toBe(timeout - 120_000 - defaults.drainMarginMs);
    expect(claimWindowMs(timeout, 120_000, 0) / timeout).toBeGreaterThan(0.6);
    expect(claimWindowMs(timeout, 1_000, 0)).toBe(timeout - 1_000 - defaults.drainMarginMs);
  });

  it('refuses settings whose worker would need more than Lambda allows, naming the largest maximum execution time that fits', () => {
    const tooLong = defineConfig({ maxExecutionMs: 830_000 });
    expect(workerTimeoutProblem(tooLong)).toMatch(/at most 820000 ms/);
    expect(() => sizeFunctions(tooLong)).toThrow(/over Lambda's 900000 ms limit/);
    expect(workerTimeoutProblem(defineConfig({ maxExecutionMs: 820_000 }))).toBeUndefined();
    expect(workerInvocationTimeoutMs(defineConfig({ maxExecutionMs: 820_000 }))).toBe(LAMBDA_MAX_TIMEOUT_MS);
  });
});

describe('a task never runs longer than its type allows', () => {
  it('takes the task timeout when shorter, the type timeout otherwise, the maximum execution time for a type without one', () => {
    expect(effectiveTimeoutMs(5_000, 60_000, defaults)).toBe(5_000);
    expect(effectiveTimeoutMs(290_000, 60_000, defaults)).toBe(60_000);
    expect(effectiveTimeoutMs(undefined, 60_000, defaults)).toBe(60_000);
    expect(effectiveTimeoutMs(undefined, undefined, defaults)).toBe(300_000);
    expect(effectiveTimeoutMs(400_000, undefined, defaults)).toBe(300_000);
    // A type declaring more than the deployment allows runs within the maximum (synth refuses it: infra test).
    expect(typeTimeoutMs(600_000, defaults)).toBe(300_000);
    expect(effectiveTimeoutMs(undefined, 600_000, defaults)).toBe(300_000);
  });

  it('a catalog type whose timeout exceeds the maximum execution time is a warning at run time, not a start-up failure', () => {
    const registry = new TaskRegistry(
      [defineTask({ name: 'long', schema: z.unknown(), timeoutMs: 240_000, handler: () => 1 })],
      defineConfig({ maxExecutionMs: 120_000 }),
    );
    expect(registry.warnings).toEqual([
      'task long: timeoutMs 240000 exceeds LEASEHOLD_MAX_EXECUTION_MS (120000 ms); it runs with 120000 ms',
    ]);
    expect(
      new TaskRegistry(
        [defineTask({ name: 'long', schema: z.unknown(), timeoutMs: 240_000, handler: () => 1 })],
        defaults,
      ).warnings,
    ).toEqual([]);
  });
});
