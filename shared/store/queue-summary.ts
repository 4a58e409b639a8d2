/**
 * One small item that says whether there is work: which types have due tasks waiting, how many tasks
 * run, and when the next delayed task falls due. Recovery writes it after each depth gauge (one write a
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
});
export type QueueSummary = z.infer<typeof queueSummarySchema>;

export async function writeQueueSummary(ctx: StoreContext, summary: QueueSummary): Promise<void> {
  const e = new Expression().assign({ ...summary, nextDueAt: summary.nextDueAt });
  await ctx.doc.send(
    new UpdateCommand({ TableName: ctx.tableName, Key: QUEUE_SUMMARY_KEY, ...e.params() }),
    deadline(ctx.config.requestDeadlineMs),
  );
}

/** The last summary (eventually consistent: a minute-old view is what it is anyway); undefined if none or unreadable. */
export async function readQueueSummary(ctx: StoreContext): Promise<QueueSummary | undefined> {
  const out = await ctx.doc.send(
    new GetCommand({ TableName: ctx.tableName, Key: QUEUE_SUMMARY_KEY }),
    deadline(ctx.config.requestDeadlineMs),
  );
  const parsed = queueSummarySchema.safeParse(out.Item);
  return parsed.success ? parsed.data : undefined;
}
