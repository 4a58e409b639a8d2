/**
 * Operator controls per task type, one small item each in a partition of their own (`TYPES`, sort key
 * the type): today whether the type is paused. Pausing stops claims of the type (workers read this
 * partition at most once a poll interval, paused-types.ts); enqueues go on and wait, running tasks finish.
 * One Query reads every type's controls, so a worker's read costs the same however many types are paused.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { KEY } from '../table-layout.js';
import type { StoreContext } from './context.js';
import { deadline } from './dynamo.js';
import { readPartitionItems } from './partition-items.js';
import { Expression } from './update-expression.js';

/** The controls' partition: no task (`TASK#`), limit, lock, stats or summary partition is named so. */
export const TYPE_CONTROLS_PARTITION = 'TYPES';

export const typeControlKey = (type: string) => ({
  [KEY.partition]: TYPE_CONTROLS_PARTITION,
  [KEY.sort]: type,
});

export const typeControlSchema = z.object({
  type: z.string(),
  paused: z.boolean(),
  /** When the type was last paused or resumed (epoch ms). */
  changedAt: z.number(),
  /** Who paused or resumed it (the API's caller). */
  changedBy: z.string().optional(),
});
export type TypeControl = z.infer<typeof typeControlSchema>;

export interface PauseChange {
  type: string;
  paused: boolean;
  /** The caller, for the record. */
  by?: string;
}

/**
 * Pauses or resumes a type; the answer is the control as written. Unconditional: pausing a paused type
 * or resuming a running one is not an error (an operator's retry must not fail), it only moves `changedAt`.
 */
export async function setTypePaused(ctx: StoreContext, change: PauseChange): Promise<TypeControl> {
  const e = new Expression().assign({
    type: change.type,
    paused: change.paused,
    changedAt: ctx.clock.now(),
    changedBy: change.by,
  });
  const out = await ctx.doc.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: typeControlKey(change.type),
      ...e.params(),
      ReturnValues: 'ALL_NEW',
    }),
    deadline(ctx.config.requestDeadlineMs),
  );
  return typeControlSchema.parse(out.Attributes);
}

/**
 * Every type's controls (one Query, eventually consistent unless told: a worker acts on a pause within
 * a poll interval anyway). An item this version cannot read is left out, not fatal.
 */
export async function readTypeControls(
  ctx: StoreContext,
  options: { consistent?: boolean; deadlineMs?: number } = {},
): Promise<Map<string, TypeControl>> {
  const items = await readPartitionItems<unknown>({
    doc: ctx.doc,
    tableName: ctx.tableName,
    partition: TYPE_CONTROLS_PARTITION,
    consistent: options.consistent === true,
    deadlineMs: options.deadlineMs ?? ctx.config.requestDeadlineMs,
  });
  const controls = new Map<string, TypeControl>();
  for (const item of items) {
    const parsed = typeControlSchema.safeParse(item);
    if (parsed.success) controls.set(parsed.data.type, parsed.data);
  }
  return controls;
}

/**
 * The types paused now, as the claim path reads them: consistent, so a read just after a pause sees it
 * (a worker keeps what it read for a poll interval).
 */
export async function readPausedTypes(ctx: StoreContext): Promise<Set<string>> {
  const controls = await readTypeControls(ctx, { consistent: true });
  return new Set([...controls.values()].filter((c) => c.paused).map((c) => c.type));
}
