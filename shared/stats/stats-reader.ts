/**
 * What GET /stats answers, read in parallel at a cost that does not grow with the number of tasks: the
 * queue summary recovery writes once a minute (one GetItem), the owner's running tasks (16 keys-only
 * Queries and at most one BatchGetItem: running-tasks.ts) and the owner's outcome counters of the window
 * (one Query: outcome-store.ts). Each request within the request path's deadline (off the lease path).
 */
import * as z from 'zod';
import type { Task } from '../task-model.js';
import { requestPathDeadlineMs, type StoreContext } from '../store/context.js';
import { epochMs, ownerSchema, parseInput } from '../task-inputs.js';
import { readQueueSummary, type QueueSummary } from '../store/queue-summary.js';
import { MINUTE_MS, minuteOf, type OutcomeCounts } from './outcome-counter.js';
import { OUTCOME_RETENTION_MS, readOutcomeMinutes } from './outcome-store.js';
import { readRunningTasks } from './running-tasks.js';

export const statsInput = z
  .object({
    owner: ownerSchema,
    /** The first minute wanted (any time in it); default: the whole window. */
    since: epochMs.optional(),
    /** How many minutes back at most, the current one included; no more than the counters keep. */
    windowMinutes: z
      .number()
      .int()
      .min(1)
      .max(OUTCOME_RETENTION_MS / MINUTE_MS),
  })
  .strict();
export type StatsInput = z.input<typeof statsInput>;

export interface QueueView {
  /** When recovery read the depth. */
  at: number;
  types: { type: string; ready: number; oldestDueAt?: number; estimated: boolean }[];
  leased: number;
  delayed: number;
  nextDueAt?: number;
}

export interface QueueStats {
  owner: string;
  /** The store's clock when it read. */
  at: number;
  /** Absent until recovery has written a summary with each type's depth. */
  queue?: QueueView;
  running: Task[];
  runningComplete: boolean;
  /** Oldest first; minutes in which nothing ended are left out. */
  minutes: { at: number; types: Record<string, OutcomeCounts> }[];
}

export async function readStats(ctx: StoreContext, rawInput: StatsInput): Promise<QueueStats> {
  const { owner, since, windowMinutes } = parseInput(statsInput, 'stats', rawInput);
  const now = ctx.clock.now();
  const to = minuteOf(now);
  const from = Math.max(minuteOf(since ?? 0), to - (windowMinutes - 1) * MINUTE_MS);
  const [summary, running, minutes] = await Promise.all([
    readQueueSummary(ctx, requestPathDeadlineMs(ctx)),
    readRunningTasks(ctx, owner),
    readOutcomeMinutes(ctx, { owner, from, to }),
  ]);
  const queue = summary && queueView(summary);
  return {
    owner,
    at: now,
    ...(queue ? { queue } : {}),
    running: running.tasks,
    runningComplete: running.complete,
    minutes: minutes.map((m) => ({ at: m.minute, types: m.types })),
  };
}

/** A summary written before the per-type figures were (an older recovery) shows no queue until the next sweep. */
function queueView(summary: QueueSummary): QueueView | undefined {
  if (summary.types === undefined || summary.delayed === undefined) return undefined;
  return {
    at: summary.writtenAt,
    types: summary.types,
    leased: summary.leased,
    delayed: summary.delayed,
    ...(summary.nextDueAt === undefined ? {} : { nextDueAt: summary.nextDueAt }),
  };
}
