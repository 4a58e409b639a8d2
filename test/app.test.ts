import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLeasehold } from '../shared/app.js';
import { createRequestLeasehold } from '../shared/request-app.js';
import { TaskStore } from '../shared/store/task-store.js';
import { createTaskRuntime } from '../shared/task-runtime.js';
import { loadConfig } from '../shared/config.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { ConfigError } from '../shared/errors.js';
import { defineTask } from '../shared/tasks/define.js';

const limited = defineTask({
  name: 'report.build',
  schema: z.unknown(),
  concurrency: 2,
  handler: () => null,
});
const other = defineTask({ name: 'mail.send', schema: z.unknown(), concurrency: 9, handler: () => null });

describe('building the app from a parsed configuration and the task definitions', () => {
  it('applies the concurrency limits task types declare, unless the environment sets them', () => {
    const app = createLeasehold(loadConfig({ LEASEHOLD_TYPE_CONCURRENCY: 'mail.send=4' }), [limited, other]);
    // The definitions' limits reach the slot gate as given; the configuration keeps only what was set.
    expect(app.store.ctx.typeLimits).toEqual({ 'report.build': 2, 'mail.send': 4 });
    expect(app.config.typeConcurrency).toEqual({ 'mail.send': 4 });
    expect(app.registry.names()).toEqual(['report.build', 'mail.send']);
  });

  it('the entry points register the demo catalog', () => {
    expect(createLeasehold(loadConfig({}), taskDefinitions).registry.names()).toEqual([
      'demo.echo',
      'demo.sleep',
      'demo.fail',
      'demo.report',
      'demo.block',
      'demo.limited',
      'demo.sum',
      'demo.steps',
    ]);
  });

  it('builds the runtime of the worker and recovery Lambdas with the same rules, without schedules', () => {
    const runtime = createTaskRuntime(loadConfig({ LEASEHOLD_TYPE_CONCURRENCY: 'mail.send=4' }), [
      limited,
      other,
    ]);
    expect(runtime.store.ctx.typeLimits).toEqual({ 'report.build': 2, 'mail.send': 4 });
    expect(runtime).not.toHaveProperty('schedules');
  });

  it('builds the API and fire Lambdas with the request store only: the same rules and schedules, no lease path', () => {
    const app = createRequestLeasehold(loadConfig({ LEASEHOLD_TYPE_CONCURRENCY: 'mail.send=4' }), [
      limited,
      other,
    ]);
    expect(app.store.ctx.typeLimits).toEqual({ 'report.build': 2, 'mail.send': 4 });
    expect(app.schedules.evaluatedLocally).toBe(true);
    // Their bundles leave out claim, lease writes and recovery because this store does not reach them.
    expect(app.store).not.toBeInstanceOf(TaskStore);
    expect(app.store).not.toHaveProperty('claim');
    expect(createLeasehold(loadConfig({}), [limited]).store).toBeInstanceOf(TaskStore);
  });

  it('refuses task definitions that cannot work, naming each', () => {
    const bad = [
      defineTask({ name: 'has space', schema: z.unknown(), handler: () => null }),
      defineTask({ name: 'slow', schema: z.unknown(), timeoutMs: 10 * 60_000, handler: () => null }),
      defineTask({ name: 'slow', schema: z.unknown(), maxAttempts: 0, handler: () => null }),
    ];
    const error = (() => {
      try {
        createLeasehold(loadConfig({}), bad);
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(error).toBeInstanceOf(ConfigError);
    // A timeout over the maximum execution time is refused at synth, not here (it runs within the maximum).
    expect(error.problems.map((p) => p.path)).toEqual([
      'task "has space"',
      'task slow',
      'task slow.maxAttempts',
    ]);
  });
});
