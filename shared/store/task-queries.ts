/** Reads for callers: one task by id, and a caller's tasks newest first with filters and a cursor. */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { TaskNotFoundError, ValidationError } from '../errors.js';
import { INDEX, KEY } from '../table-layout.js';
import type { Task } from '../task-model.js';
import type { StoreContext } from './context.js';
import { listInput, parseInput, taskRefInput, type ListInput } from './inputs.js';
import { readItems, readTaskItem } from './task-reads.js';
import { toTask, type TaskItem } from './task-item.js';

/** Reads a task; with `owner`, another owner's task is reported as not found (no existence leak). */
export async function getTask(ctx: StoreContext, rawInput: { id: string; owner?: string }): Promise<Task> {
  const { id, owner } = parseInput(taskRefInput, 'getTask', rawInput);
  const item = await readTaskItem(ctx, id);
  if (!item || (owner !== undefined && item.owner !== owner)) throw new TaskNotFoundError(id);
  return toTask(item);
}

export interface TaskPage {
  tasks: Task[];
  nextCursor?: string;
}

const cursorSchema = z.object({ pk: z.string(), sk: z.string(), ownerPk: z.string(), ownerSk: z.string() }).strict();
/** Index pages read at most per call, so a rare status filter cannot turn one request into a long scan. */
const MAX_PAGES_PER_LIST = 10;

/**
 * The owner index is keys-only (plus the never-changing type) so status changes never write it; the
 * items are fetched by key. A status filter is applied after that read, so a page may come back short
 * with a cursor: keep following `nextCursor` until it is absent.
 */
export async function listTasks(ctx: StoreContext, rawInput: ListInput): Promise<TaskPage> {
  const input = parseInput(listInput, 'listTasks', rawInput);
  let startKey = input.cursor === undefined ? undefined : decodeCursor(input.cursor, input.owner);
  const tasks: Task[] = [];
  for (let page = 0; page < MAX_PAGES_PER_LIST; page++) {
    const out = await ctx.doc.send(
      new QueryCommand({
        TableName: ctx.tableName,
        IndexName: INDEX.owner.name,
        KeyConditionExpression: '#o = :o',
        ...(input.type ? { FilterExpression: '#t = :t' } : {}),
        ExpressionAttributeNames: { '#o': INDEX.owner.partition, ...(input.type ? { '#t': 'type' } : {}) },
        ExpressionAttributeValues: { ':o': input.owner, ...(input.type ? { ':t': input.type } : {}) },
        ScanIndexForward: false,
        Limit: input.limit - tasks.length,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    const keys = (out.Items ?? []) as IndexKey[];
    const items = await readItems<TaskItem>(ctx, keys.map((k) => ({ [KEY.partition]: k.pk, [KEY.sort]: k.sk })));
    const byPk = new Map(items.map((i) => [i.pk, i]));
    for (const key of keys) {
      const item = byPk.get(key.pk);
      // Deleted (TTL) between the index read and the item read: nothing to show.
      if (item && (input.status === undefined || item.status === input.status)) tasks.push(toTask(item));
    }
    startKey = out.LastEvaluatedKey as IndexKey | undefined;
    if (!startKey || tasks.length >= input.limit) break;
  }
  return startKey ? { tasks, nextCursor: encodeCursor(startKey) } : { tasks };
}

type IndexKey = z.infer<typeof cursorSchema>;

function encodeCursor(key: IndexKey): string {
  return Buffer.from(JSON.stringify({ pk: key.pk, sk: key.sk, ownerPk: key.ownerPk, ownerSk: key.ownerSk })).toString('base64url');
}

function decodeCursor(cursor: string, owner: string): IndexKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const key = cursorSchema.safeParse(parsed);
  if (!key.success || key.data.ownerPk !== owner) {
    throw new ValidationError('listTasks', [{ path: 'cursor', message: 'is not a cursor from an earlier page of this list; start again without one' }]);
  }
  return key.data;
}
