/**
 * Reads and writes of a task's body items: its payload, result or error when too large for the task
 * item. Where they go and why: body-layout.ts.
 */
import { readPartitionItems } from './partition-items.js';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { KEY, taskKey, TTL_ATTRIBUTE } from '../table-layout.js';
import { outcomeSortKey, payloadSortKey } from './body-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { Expression } from './update-expression.js';
import type { TaskItem } from './task-item.js';

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
 * put, so the worker's role needs no PutItem (it never creates tasks); it returns nothing (a 256 KB
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

/** A task item with the body items it names, read in one consistent Query of its partition. */
export interface TaskWithBody {
  item: TaskItem;
  payload?: string;
  result?: string;
  error?: string;
}

export async function readTaskWithBody(ctx: StoreContext, id: string): Promise<TaskWithBody | undefined> {
  const items = await readPartitionItems<Record<string, unknown>>({
    doc: ctx.doc,
    tableName: ctx.tableName,
    partition: taskKey(id)[KEY.partition]!,
    consistent: true,
  });
  const bySortKey = new Map(items.map((i) => [String(i[KEY.sort]), i]));
  const item = bySortKey.get(taskKey(id)[KEY.sort]) as TaskItem | undefined;
  if (!item) return undefined;
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
