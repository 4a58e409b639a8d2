/** Schedule definitions as stored and shown, and the request body that creates or replaces one. */
import * as z from 'zod';
import { PRIORITY_LIMIT } from '../table-layout.js';

/** EventBridge Scheduler's schedule-name rule. */
export const scheduleNameSchema = z.string().regex(/^[0-9a-zA-Z._-]{1,64}$/, 'must be 1-64 characters: letters, digits, . _ -');

export const scheduleBody = z
  .object({
    expression: z.string({ error: 'is required: rate(...), cron(...) or at(...)' }).max(256),
    timezone: z.string().max(64).default('UTC'),
    task: z
      .object({
        type: z.string({ error: 'is required: the task type each fire enqueues' }),
        payload: z.unknown().optional(),
        priority: z.number().int('must be a whole number').min(-PRIORITY_LIMIT).max(PRIORITY_LIMIT).optional(),
        maxAttempts: z.number().int('must be a whole number').min(1).max(100).optional(),
      })
      .strict(),
    enabled: z.boolean().default(true),
  })
  .strict();
export type ScheduleBody = z.output<typeof scheduleBody>;

export type SyncState = 'SYNCED' | 'PENDING' | 'FAILED' | 'LOCAL';

export interface ScheduleDefinition extends ScheduleBody {
  name: string;
  owner: string;
  createdAt: number;
  updatedAt: number;
  version: number;
  /** Whether EventBridge Scheduler matches this definition (LOCAL: evaluated by the local stack, no EventBridge). */
  syncState: SyncState;
  syncError?: string;
}

export interface FireRecord {
  scheduledTime: number;
  taskId?: string;
  firedAt: number;
  error?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function scheduleJson(def: ScheduleDefinition, nextFireAt: number | undefined): Record<string, unknown> {
  return {
    name: def.name,
    expression: def.expression,
    timezone: def.timezone,
    task: def.task,
    enabled: def.enabled,
    createdAt: iso(def.createdAt),
    updatedAt: iso(def.updatedAt),
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
export const fireIdempotencyKey = (name: string, scheduledTime: number) => `schedule:${name}:${iso(scheduledTime)}`;
