/** The set of task types a deployment knows: checked once, consulted at enqueue and at run time. */
import * as z from 'zod';
import { MAX_DURATION_MS, type LeaseholdConfig } from '../config.js';
import { ConfigError, ValidationError, type InputProblem } from '../errors.js';
import { taskTypeSchema } from '../task-inputs.js';
import { MAX_RATE_INTERVAL_MS, MAX_RATE_LIMIT, type RateLimit } from '../rate-rules.js';
import type { TaskDefinition } from './define.js';
import { groupConcurrencySchema, type TypeGrouping } from '../group-rules.js';

const backoffMs = z
  .number()
  .int()
  .min(0)
  .max(MAX_DURATION_MS, `must be at most ${MAX_DURATION_MS} ms (7 days), like LEASEHOLD_BACKOFF_MAX_MS`);

const policySchema = z.object({
  maxAttempts: z.number().int().min(1).max(100).optional(),
  timeoutMs: z.number().int().positive().optional(),
  concurrency: z.number().int().min(1).max(10_000).optional(),
  rateLimit: z
    .object({
      limit: z.number().int().min(1).max(MAX_RATE_LIMIT, `must be at most ${MAX_RATE_LIMIT} starts`),
      intervalMs: z
        .number()
        .int()
        .min(1)
        .max(MAX_RATE_INTERVAL_MS, `must be at most ${MAX_RATE_INTERVAL_MS} ms (a day)`),
    })
    .strict()
    .optional(),
  groupConcurrency: groupConcurrencySchema.optional(),
  fairShares: z.boolean().optional(),
  // Bounded like LEASEHOLD_BACKOFF_MAX_MS: a retry's promotion is a timer, and Node's overflow at ~24.8 days fires it at once.
  backoff: z.object({ baseMs: backoffMs, maxMs: backoffMs }).optional(),
});

export class TaskRegistry {
  private readonly byName = new Map<string, TaskDefinition>();
  /** Definitions that cannot run as declared with this configuration (they run within it). */
  readonly warnings: string[] = [];

  constructor(definitions: TaskDefinition[], config: Pick<LeaseholdConfig, 'maxExecutionMs'>) {
    const problems: InputProblem[] = [];
    for (const def of definitions) {
      const name = taskTypeSchema.safeParse(def.name);
      if (!name.success)
        problems.push({
          path: `task ${JSON.stringify(def.name)}`,
          message: `name ${name.error.issues[0]!.message}`,
        });
      if (this.byName.has(def.name)) problems.push({ path: `task ${def.name}`, message: 'is defined twice' });
      const policy = policySchema.safeParse(def);
      if (!policy.success)
        problems.push(
          ...policy.error.issues.map((i) => ({
            path: `task ${def.name}.${i.path.join('.')}`,
            message: i.message,
          })),
        );
      // Runs at the maximum instead (effectiveTimeoutMs): refusing here would take every function of a
      // deployment down at start-up; `cdk synth` refuses it instead (infra), before anything is deployed.
      if (def.timeoutMs !== undefined && def.timeoutMs > config.maxExecutionMs) {
        this.warnings.push(
          `task ${def.name}: timeoutMs ${def.timeoutMs} exceeds LEASEHOLD_MAX_EXECUTION_MS (${config.maxExecutionMs} ms); it runs with ${config.maxExecutionMs} ms`,
        );
      }
      this.byName.set(def.name, def);
    }
    if (problems.length > 0) throw new ConfigError(problems);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string): TaskDefinition | undefined {
    return this.byName.get(name);
  }

  /** Per-type concurrency limits declared by the definitions. */
  limits(): Record<string, number> {
    return Object.fromEntries(
      [...this.byName.values()].flatMap((d) =>
        d.concurrency === undefined ? [] : [[d.name, d.concurrency]],
      ),
    );
  }

  /** The rate limits the definitions declare, by type. */
  rateLimits(): Record<string, RateLimit> {
    return Object.fromEntries(
      [...this.byName.values()].flatMap((d) => (d.rateLimit === undefined ? [] : [[d.name, d.rateLimit]])),
    );
  }

  /** The groups' concurrency and the fair-share types the definitions declare. */
  grouping(): TypeGrouping {
    const defs = [...this.byName.values()];
    return {
      concurrency: Object.fromEntries(
        defs.flatMap((d) => (d.groupConcurrency === undefined ? [] : [[d.name, d.groupConcurrency]])),
      ),
      fairShares: defs.filter((d) => d.fairShares === true).map((d) => d.name),
    };
  }

  /** The definition and the parsed payload, or a ValidationError naming the type or each bad payload field. */
  parsePayload(
    type: string,
    payload: unknown,
    operation = 'enqueue',
  ): { definition: TaskDefinition; payload: unknown } {
    const definition = this.byName.get(type);
    if (!definition) {
      throw new ValidationError(operation, [
        {
          path: 'type',
          message: `unknown task type "${type}"; known types: ${this.names().join(', ') || '(none)'}`,
        },
      ]);
    }
    const parsed = definition.schema.safeParse(payload);
    if (!parsed.success) {
      throw new ValidationError(
        operation,
        parsed.error.issues.map((i) => ({
          path: ['payload', ...i.path.map(String)].join('.'),
          message: i.message,
        })),
      );
    }
    return { definition, payload: parsed.data };
  }
}
