/** Schedule definitions as stored and shown, and the request body that creates or replaces one. */
import * as z from 'zod';
import { PRIORITY_LIMIT } from '../table-layout.js';
import { taskPayload } from '../task-inputs.js';

/** EventBridge Scheduler's schedule-name rule. */
export const scheduleNameSchema = z
  .string()
  .regex(/^[0-9a-zA-Z._-]{1,64}$/, 'must be 1-64 characters: letters, digits, . _ -');

export const scheduleBody = z
  .object({
    expression: z.string({ error: 'is required: rate(...), cron(...) or at(...)' }).max(256),
    timezone: z.string().max(64).default('UTC'),
    task: z
      .object({
        type: z.string({ error: 'is required: the task type each fire enqueues' }),
        // Checked as enqueue checks a task payload (depth, size, plain JSON): a definition that passes
        // PUT must not fail at every fire.
        payload: taskPayload.optional(),
        priority: z
          .number()
          .int('must be a whole number')
          .min(-PRIORITY_LIMIT)
          .max(PRIORITY_LIMIT)
          .optional(),
        maxAttempts: z.number().int('must be a whole number').min(1).max(100).optional(),
      })
      .strict(),
    enabled: z.boolean().default(true),
  })
  .strict();
export type ScheduleBody = z.output<typeof scheduleBody>;

export type SyncState = 'SYNCED' | 'PENDING' | 'FAILED' | 'LOCAL';

/** What every write to a definition is conditioned on: the definition as it was read (see schedule-conditions.ts). */
export interface DefinitionRef {
  name: string;
  owner: string;
  generation?: string | undefined;
  version: number;
}

export const refOf = (def: ScheduleDefinition): DefinitionRef => ({
  name: def.name,
  owner: def.owner,
  generation: def.generation,
  version: def.version,
});

export interface ScheduleDefinition extends ScheduleBody {
  name: string;
  owner: string;
  /**
   * Which creation of this name the definition belongs to: set when the name is created, kept by every
   * replacement, new after a delete. Its fires are kept under it, so whoever creates the name next
   * starts with an empty history. Absent on definitions written before generations existed.
   */
  generation?: string;
  createdAt: number;
  /** The last PUT. EventBridge Scheduler restarts a rate schedule's rhythm when it is created or updated, so rate ticks count from here. */
  updatedAt: number;
  /** Grows with every PUT of the same generation; every write to the definition is conditioned on it. */
  version: number;
  /** A one-time (`at`) schedule whose tick has fired: it is disabled, and expires from the table after the retention period. */
  completedAt?: number;
  /** Whether EventBridge Scheduler matches this definition (LOCAL: evaluated by the local stack, no EventBridge). */
  syncState: SyncState;
  syncError?: string;
}

/** What deciding whether a definition has a tick due takes (see ScheduleStore.timings). */
export type ScheduleTiming = Pick<
  ScheduleDefinition,
  'name' | 'owner' | 'generation' | 'expression' | 'timezone' | 'enabled' | 'updatedAt'
>;

export interface FireRecord {
  scheduledTime: number;
  taskId?: string;
  firedAt: number;
  error?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function scheduleJson(
  def: ScheduleDefinition,
  nextFireAt: number | undefined,
): Record<string, unknown> {
  return {
    name: def.name,
    expression: def.expression,
    timezone: def.timezone,
    task: def.task,
    enabled: def.enabled,
    createdAt: iso(def.createdAt),
    updatedAt: iso(def.updatedAt),
    ...(def.completedAt === undefined ? {} : { completedAt: iso(def.completedAt) }),
    ...(nextFireAt === undefined ? {} : { nextFireAt: iso(nextFireAt) }),
    sync: { state: def.syncState, ...(def.syncError ? { error: def.syncError } : {}) },
  };
}

export function fireJson(fire: FireRecord): Record<string, unknown> {
  return {
    scheduledTime: iso(fire.scheduledTime),
    firedAt: iso(fire.firedAt),
    ...(fire.taskId ? { taskId: fire.taskId } : {}),
    ...(fire.error ? { error: fire.error } : {}),
  };
}

/** The idempotency key of a tick: every delivery or node firing the same tick enqueues the same task. */
export const fireIdempotencyKey = (name: string, scheduledTime: number) =>
  `schedule:${name}:${iso(scheduledTime)}`;
