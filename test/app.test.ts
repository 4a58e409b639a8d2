import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLeasehold } from '../shared/app.js';
import { createTaskRuntime } from '../shared/task-runtime.js';
import { ConfigError } from '../shared/errors.js';
import { defineTask } from '../shared/tasks/define.js';

const limited = defineTask({ name: 'report.build', schema: z.unknown(), concurrency: 2, handler: () => null });
const other = defineTask({ name: 'mail.send', schema: z.unknown(), concurrency: 9, handler: () => null });

describe('building the app from the environment', () => {
  it('applies the concurrency limits task types declare, unless the environment sets them', () => {
    const app = createLeasehold({ LEASEHOLD_TYPE_CONCURRENCY: 'mail.send=4' }, { definitions: [limited, other] });
    expect(app.config.typeConcurrency).toEqual({ 'report.build': 2, 'mail.send': 4 });
    expect(app.registry.names()).toEqual(['report.build', 'mail.send']);
  });

  it('registers the demo task types by default', () => {
    expect(createLeasehold({}).registry.names()).toEqual(['demo.echo', 'demo.sleep', 'demo.fail', 'demo.report', 'demo.block']);
  });

  it('builds the runtime of the worker and recovery Lambdas with the same rules, without schedules', () => {
    const runtime = createTaskRuntime({ LEASEHOLD_TYPE_CONCURRENCY: 'mail.send=4' }, { definitions: [limited, other] });
    expect(runtime.config.typeConcurrency).toEqual({ 'report.build': 2, 'mail.send': 4 });
    expect(runtime).not.toHaveProperty('schedules');
  });

  it('refuses task definitions that cannot work, naming each', () => {
    const bad = [
      defineTask({ name: 'has space', schema: z.unknown(), handler: () => null }),
      defineTask({ name: 'slow', schema: z.unknown(), timeoutMs: 10 * 60_000, handler: () => null }),
      defineTask({ name: 'slow', schema: z.unknown(), maxAttempts: 0, handler: () => null }),
    ];
    const error = (() => {
      try {
        createLeasehold({}, { definitions: bad });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(error).toBeInstanceOf(ConfigError);
    // A timeout over the maximum execution time is refused at synth, not here (it runs within the maximum).
    expect(error.problems.map((p) => p.path)).toEqual(['task "has space"', 'task slow', 'task slow.maxAttempts']);
  });
});
