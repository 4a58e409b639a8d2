/**
 * One small item that says whether there is work: which types have due tasks waiting, how many tasks
 * run, and when the next delayed task falls due; and, for GET /stats, each type's depth. Recovery writes it after each depth gauge (one write a
 * minute); the worker's scheduled tick reads it (one read) and returns at once when there is nothing to
 * do, instead of polling every ready partition of every type (16 and a lane per type) for its idle
 * window. Work that arrives between two summaries starts a worker by its kick (fleet/enqueue-kicker.ts);
 * the summary is the floor under a kick that was lost.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { KEY } from '../table-layout.js';
import type { StoreContext } from './context.js';
import { deadline } from './dynamo.js';
import { Expression } from './update-expression.js';

/** The summary's key: a partition of its own (no task, slot, seat or schedule partition is named so). */
export const QUEUE_SUMMARY_KEY = { [KEY.partition]: 'QUEUE', [KEY.sort]: 'SUMMARY' } as const;

export const queueSummarySchema = z.object({
  /** When recovery read the depth it summarises (epoch ms). */
  writtenAt: z.number(),
  /** Types with due tasks waiting (ready index), as the gauge counted them. */
  readyTypes: z.array(z.string()),
  /** Tasks under a lease when it was read. */
  leased: z.number(),
  /** The earliest due time among delayed tasks (delays and retry backoffs), if any waits. */
  nextDueAt: z.number().optional(),
  // Added for GET /stats (stats/stats-reader.ts); optional, so a summary written before still parses.
  /** Every gauged type: due tasks waiting, the oldest one's due time, and whether the count is an estimate. */
  types: z
    .array(
      z.object({
        type: z.string(),
        ready: z.number(),
        oldestDueAt: z.number().optional(),
        /** The gauge's basis was not `counted` (queue-depth.ts). */
        estimated: z.boolean(),
      }),
    )
    .optional(),
  /** Tasks waiting for their due time. */
  delayed: z.number().optional(),
});
export type QueueSummary = z.infer<typeof queueSummarySchema>;

export async function writeQueueSummary(ctx: StoreContext, summary: QueueSummary): Promise<void> {
  const e = new Expression().assign({ ...summary, nextDueAt: summary.nextDueAt });
  await ctx.doc.send(
    new UpdateCommand({ TableName: ctx.tableName, Key: QUEUE_SUMMARY_KEY, ...e.params() }),
    deadline(ctx.config.requestDeadlineMs),
  );
}

/**
 * The last summary (eventually consistent: a minute-old view is what it is anyway); undefined if none or
 * unreadable. Within the lease-path deadline unless told (the worker's tick must not wait long).
 */
export async function readQueueSummary(
  ctx: StoreContext,
  deadlineMs = ctx.config.requestDeadlineMs,
): Promise<QueueSummary | undefined> {
  const out = await ctx.doc.send(
    new GetCommand({ TableName: ctx.tableName, Key: QUEUE_SUMMARY_KEY }),
    deadline(deadlineMs),
  );
  const parsed = queueSummarySchema.safeParse(out.Item);
  return parsed.success ? parsed.data : undefined;
}
