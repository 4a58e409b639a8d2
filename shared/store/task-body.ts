/**
 * Reads and writes of a task's body items: its payload, result or error when too large for the task
 * item. Where they go and why: body-layout.ts.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { KEY, taskKey, TTL_ATTRIBUTE } from '../table-layout.js';
import { outcomeSortKey, payloadSortKey } from './body-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { Expression } from './update-expression.js';
import type { TaskItem } from './task-item.js';
import { itemExists } from './conditions.js';
import { isConditionalCheckFailed } from './dynamo.js';
import { readItems, readTaskItem } from './task-reads.js';

export interface PayloadItem {
  pk: string;
  sk: string;
  payload: string;
  expiresAt: number;
}

export interface OutcomeItem {
  pk: string;
  sk: string;
  result?: string;
  error?: string;
  expiresAt: number;
}

/**
 * Writes a body item. No condition: its key is its own (body-layout.ts), so a resend writes the same
 * content and the SDK's retries need no read-back. An UpdateItem that creates the item rather than a
 * put (the worker puts only the tasks a handler enqueues as children); it returns nothing (a 256 KB
 * payload need not come back). Under a deadline: the SDK's request timeout only warns.
 */
export async function putBody(
  ctx: StoreContext,
  taskId: string,
  sk: string,
  fields: { payload: string } | { result: string } | { error: string },
  expiresAt: number,
  path: 'lease' | 'request',
): Promise<void> {
  const key = { [KEY.partition]: taskKey(taskId)[KEY.partition], [KEY.sort]: sk };
  const e = new Expression().assign({ ...fields, [TTL_ATTRIBUTE]: expiresAt });
  await ctx.doc.send(
    new UpdateCommand({ TableName: ctx.tableName, Key: key, ...e.params(), ReturnValues: 'NONE' }),
    { abortSignal: AbortSignal.timeout(writeTargetOf(ctx, path).deadlineMs) },
  );
}

/**
 * The payload of a task whose payload has its own item, read when it is claimed: eventually
 * consistent first (half the read units), consistently when that misses (an index can show the task
 * before a replica has its payload). Undefined when the item is gone.
 */
export async function readPayload(
  ctx: StoreContext,
  item: Pick<TaskItem, 'id' | 'requestHash'>,
  options: { abortSignal?: AbortSignal } = {},
): Promise<string | undefined> {
  const key = {
    [KEY.partition]: taskKey(item.id)[KEY.partition],
    [KEY.sort]: payloadSortKey(item.requestHash),
  };
  for (const consistent of [false, true]) {
    const out = await ctx.doc.send(
      new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: consistent }),
      options,
    );
    const found = out.Item as PayloadItem | undefined;
    if (found) return found.payload;
  }
  return undefined;
}

/** A task item with the body items it names. */
export interface TaskWithBody {
  item: TaskItem;
  payload?: string;
  result?: string;
  error?: string;
}

/**
 * The task item (consistent GetItem), then only the body items it names (one BatchGetItem): its
 * payload kept apart, and its result's and last error's items. Never the rest of its partition, where
 * items no field names can lie until their TTL (an earlier attempt's long error).
 */
export async function readTaskWithBody(ctx: StoreContext, id: string): Promise<TaskWithBody | undefined> {
  const item = await readTaskItem(ctx, id);
  if (!item) return undefined;
  const named = [
    item.payloadBytes === undefined ? undefined : payloadSortKey(item.requestHash),
    item.resultToken === undefined ? undefined : outcomeSortKey(item.resultToken),
    item.errorToken === undefined ? undefined : outcomeSortKey(item.errorToken),
  ].filter((sk): sk is string => sk !== undefined);
  const partition = taskKey(id)[KEY.partition]!;
  const body =
    named.length === 0
      ? []
      : await readItems<Record<string, unknown>>(
          ctx,
          [...new Set(named)].map((sk) => ({ [KEY.partition]: partition, [KEY.sort]: sk })),
        );
  const bySortKey = new Map(body.map((i) => [String(i[KEY.sort]), i]));
  const outcome = (token: number | undefined) =>
    token === undefined ? undefined : (bySortKey.get(outcomeSortKey(token)) as OutcomeItem | undefined);
  return {
    item,
    payload:
      item.payloadBytes === undefined
        ? item.payload
        : (bySortKey.get(payloadSortKey(item.requestHash)) as PayloadItem | undefined)?.payload,
    result: item.resultToken === undefined ? item.result : outcome(item.resultToken)?.result,
    error: (item.errorToken === undefined ? undefined : outcome(item.errorToken)?.error) ?? item.error,
  };
}

/**
 * Moves a body item's TTL to `until` (epoch seconds): false when the item is not there. Conditioned on
 * it existing, so it never makes an empty item. An UpdateItem, not a delete, so callers that may write
 * body items (the API, direct clients) need no DeleteItem.
 */
export async function setBodyExpiry(
  ctx: StoreContext,
  taskId: string,
  sk: string,
  until: number,
  path: 'lease' | 'request',
): Promise<boolean> {
  const key = { [KEY.partition]: taskKey(taskId)[KEY.partition], [KEY.sort]: sk };
  const e = new Expression().set(TTL_ATTRIBUTE, until).require(itemExists);
  try {
    await ctx.doc.send(new UpdateCommand({ TableName: ctx.tableName, Key: key, ...e.params() }), {
      abortSignal: AbortSignal.timeout(writeTargetOf(ctx, path).deadlineMs),
    });
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

/**
 * Marks a body item no task names any more for deletion by the table's TTL (a payload written for an
 * enqueue that another request's task then refused; an earlier attempt's error). Gone already is fine.
 */
export async function expireBody(
  ctx: StoreContext,
  taskId: string,
  sk: string,
  path: 'lease' | 'request' = 'request',
): Promise<void> {
  await setBodyExpiry(ctx, taskId, sk, Math.floor(ctx.clock.now() / 1000), path);
}
