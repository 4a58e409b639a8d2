/** Consistent reads of task items. */
import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseholdError } from '../errors.js';
import { taskKey } from '../table-layout.js';
import type { StoreContext } from './context.js';
import { deadline } from './dynamo.js';
import type { TaskItem } from './task-item.js';

export async function readTaskItem(
  ctx: StoreContext,
  id: string,
  options: { abortSignal?: AbortSignal } = {},
): Promise<TaskItem | undefined> {
  const out = await ctx.doc.send(
    new GetCommand({ TableName: ctx.tableName, Key: taskKey(id), ConsistentRead: true }),
    options,
  );
  return out.Item as TaskItem | undefined;
}

/**
 * Reads many items by key, in chunks of 100, retrying what DynamoDB leaves unprocessed. Consistently
 * unless told (a dashboard's view may be a moment old at half the read units); `deadlineMs` bounds each request.
 */
export async function readItems<T>(
  ctx: StoreContext,
  keys: Record<string, string>[],
  options: { consistent?: boolean; deadlineMs?: number } = {},
): Promise<T[]> {
  const consistent = options.consistent ?? true;
  const found: T[] = [];
  for (let i = 0; i < keys.length; i += 100) {
    let pending: Record<string, unknown>[] = keys.slice(i, i + 100);
    for (let round = 0; pending.length > 0; round++) {
      if (round > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** round)));
      const out = await ctx.doc.send(
        new BatchGetCommand({
          RequestItems: {
            [ctx.tableName]: { Keys: pending, ...(consistent ? { ConsistentRead: true } : {}) },
          },
        }),
        options.deadlineMs === undefined ? {} : deadline(options.deadlineMs),
      );
      found.push(...((out.Responses?.[ctx.tableName] ?? []) as T[]));
      pending = (out.UnprocessedKeys?.[ctx.tableName]?.Keys ?? []) as Record<string, unknown>[];
      if (round > 8 && pending.length > 0) throw new ReadIncompleteError(pending.length, round);
    }
  }
  return found;
}

/** DynamoDB kept leaving keys of a batch read unprocessed (throttling, a hot partition); reading again later is safe. */
export class ReadIncompleteError extends LeaseholdError {
  override name = 'ReadIncompleteError';
  override readonly code = 'READ_INCOMPLETE';
  override readonly status = 503;
  override readonly retryAfterSeconds = 1;
  constructor(
    readonly unprocessed: number,
    readonly retries: number,
  ) {
    super(`BatchGetItem left ${unprocessed} keys unprocessed after ${retries} retries`);
  }
}
