/**
 * Durable steps (ctx.step): each step's JSON result in a body item of its task, `STEP#<name>`, never
 * in the task item (the lease path writes that, and pays for its size on every write). An attempt reads
 * its task's steps once, at its first ctx.step (one consistent Query of the task's partition), and
 * writes one item per step that ran.
 *
 * Fenced by the attempt's token: a step's item records the token that wrote it, and a write requires no
 * newer token there (noNewerStep). A holder that lost its lease while its step ran cannot overwrite the
 * result the task's newer attempt stored and relies on; if it stores first, the newer attempt replays
 * that result (the step's function did run).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseholdError } from '../errors.js';
import { KEY, taskKey, TTL_ATTRIBUTE } from '../table-layout.js';
import type { Lease } from '../task-inputs.js';
import { bodyExpiry } from './body-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate } from './conditional-write.js';
import { noNewerStep } from './conditions.js';
import { deadline } from './dynamo.js';
import { Expression } from './update-expression.js';

export const STEP_PREFIX = 'STEP#';
export const stepSortKey = (name: string) => `${STEP_PREFIX}${name}`;

/** A stored step: its result's JSON text and the token of the attempt that stored it. */
export interface StoredStep {
  name: string;
  result: string;
  token: number;
  storedAt: number;
}

interface StepItem {
  sk: string;
  result: string;
  token: number;
  storedAt: number;
  /** The `createdAt` of the task that stored it: an id used again (its key's record expired) is a new task. */
  taskCreatedAt: number;
}

/**
 * Every step stored for a task, by name (a task has as many items as named steps: a page or two). Only
 * this task's: an idempotent id used again after its record expired is a new task (`createdAt`), whose
 * steps must not be replayed from the old one's items, which live on until their TTL.
 */
export async function readSteps(
  ctx: StoreContext,
  task: { id: string; createdAt: number },
): Promise<Map<string, StoredStep>> {
  const taskId = task.id;
  const steps = new Map<string, StoredStep>();
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await ctx.doc.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :step)',
        ExpressionAttributeNames: { '#pk': KEY.partition, '#sk': KEY.sort },
        ExpressionAttributeValues: { ':pk': taskKey(taskId)[KEY.partition], ':step': STEP_PREFIX },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
      deadline(ctx.config.requestDeadlineMs),
    );
    for (const item of (out.Items ?? []) as StepItem[]) {
      if (item.taskCreatedAt !== task.createdAt) continue;
      const name = item.sk.slice(STEP_PREFIX.length);
      steps.set(name, { name, result: item.result, token: item.token, storedAt: item.storedAt });
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return steps;
}

/** Stores a step's result under the attempt's token; a StepFencedError when a newer attempt stored it first. */
export async function writeStep(
  ctx: StoreContext,
  lease: Pick<Lease, 'taskId' | 'token' | 'createdAt'>,
  name: string,
  result: string,
): Promise<void> {
  const now = ctx.clock.now();
  const key = { [KEY.partition]: taskKey(lease.taskId)[KEY.partition], [KEY.sort]: stepSortKey(name) };
  const e = new Expression()
    .assign({
      result,
      token: lease.token,
      storedAt: now,
      taskCreatedAt: lease.createdAt,
      [TTL_ATTRIBUTE]: bodyExpiry(now, ctx.config),
    })
    .require(noNewerStep(lease.token));
  const written = await conditionalUpdate(writeTargetOf(ctx), key, e, { resends: 2 });
  if (!written.applied) throw new StepFencedError(lease.taskId, name, lease.token);
}

/** A newer attempt of the task (this one's lease was lost) stored the step first: this attempt must stop. */
export class StepFencedError extends LeaseholdError {
  override name = 'StepFencedError';
  override readonly code = 'STEP_FENCED';
  constructor(
    readonly taskId: string,
    readonly step: string,
    readonly token: number,
  ) {
    super(
      `Step "${step}" of task ${taskId} was stored by a newer attempt than this one (token ${token}): this attempt's lease is lost.`,
    );
  }
}
