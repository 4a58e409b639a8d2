/**
 * Operator controls per task type, one small item each in a partition of their own (`TYPES`, sort key
 * the type): whether the type is paused, and whether it has grouped tasks (`grouped`, set by enqueue). Pausing stops claims of the type (workers read this
 * partition at most once a poll interval, paused-types.ts); enqueues go on and wait, running tasks finish.
 * One Query reads every type's controls, so a worker's read costs the same however many types are paused.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { KEY } from '../table-layout.js';
import { requestPathDeadlineMs, type StoreContext } from './context.js';
import { deadline } from './dynamo.js';
import { readPartitionItems } from './partition-items.js';
import { Expression } from './update-expression.js';

/** The controls' partition: no task (`TASK#`), limit, lock, stats or summary partition is named so. */
export const TYPE_CONTROLS_PARTITION = 'TYPES';

export const typeControlKey = (type: string) => ({
  [KEY.partition]: TYPE_CONTROLS_PARTITION,
  [KEY.sort]: type,
});

const storedControlSchema = z.object({
  type: z.string(),
  /** Absent on a type never paused (its item holds only `grouped`). */
  paused: z.boolean().default(false),
  /** When the type was last paused or resumed (epoch ms). */
  changedAt: z.number().optional(),
  /** Who paused or resumed it (the API's caller). */
  changedBy: z.string().optional(),
  /** Some task of the type was enqueued with a group: claimers read its rotation partitions too. */
  grouped: z.boolean().optional(),
});
type StoredControl = z.infer<typeof storedControlSchema>;

/** A type's pause as a pause or resume wrote it. */
export const typeControlSchema = storedControlSchema.required({ changedAt: true });
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
): Promise<Map<string, StoredControl>> {
  const items = await readPartitionItems<unknown>({
    doc: ctx.doc,
    tableName: ctx.tableName,
    partition: TYPE_CONTROLS_PARTITION,
    consistent: options.consistent === true,
    deadlineMs: options.deadlineMs ?? ctx.config.requestDeadlineMs,
  });
  const controls = new Map<string, StoredControl>();
  for (const item of items) {
    const parsed = storedControlSchema.safeParse(item);
    if (parsed.success) controls.set(parsed.data.type, parsed.data);
  }
  return controls;
}

/**
 * The types paused now, as the claim path reads them: consistent, so a read just after a pause sees it
 * (a worker keeps what it read for a poll interval).
 */
export async function readPausedTypes(ctx: StoreContext): Promise<Set<string>> {
  return (await readClaimControls(ctx)).paused;
}

/** What a claimer needs of the controls: the types paused, and the types with grouped tasks. */
export interface ClaimControls {
  paused: Set<string>;
  grouped: Set<string>;
}

/** The claim path's read of the controls: one consistent Query for both (type-controls' header). */
export async function readClaimControls(ctx: StoreContext): Promise<ClaimControls> {
  const controls = [...(await readTypeControls(ctx, { consistent: true })).values()];
  return {
    paused: new Set(controls.filter((c) => c.paused).map((c) => c.type)),
    grouped: new Set(controls.filter((c) => c.grouped === true).map((c) => c.type)),
  };
}

/**
 * Marks a type as having grouped tasks, before the first of them is written: claimers read a type's
 * rotation partitions only when marked (or declared with fair shares), so a deployment without groups
 * reads nothing more. Unconditional and idempotent; a process marks each type once (task-requests.ts).
 */
export async function markTypeGrouped(ctx: StoreContext, type: string): Promise<void> {
  const e = new Expression().assign({ type, grouped: true });
  await ctx.doc.send(
    new UpdateCommand({ TableName: ctx.tableName, Key: typeControlKey(type), ...e.params() }),
    deadline(requestPathDeadlineMs(ctx)),
  );
}
