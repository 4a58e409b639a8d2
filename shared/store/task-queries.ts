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
 * The most a page of tasks may weigh. The API's Lambda may return at most 6 MB (6,291,456 bytes) from a
 * synchronous invocation, and API Gateway answers 500 to anything larger; a task can weigh about 330 KB
 * (payload 256 KB, result 64 KB, error), so 100 of them would not fit. What Lambda counts is its result
 * object, in which the JSON body is itself a JSON string: every quote and backslash of the body counts
 * twice. Measured that way, 5 MB leaves a megabyte for the envelope (status, headers, `nextCursor`).
 */
export const MAX_LIST_PAGE_BYTES = 5 * 1024 * 1024;
/** Per task, on top of what is measured: the API shows times as ISO-8601 text, longer than epoch numbers, and commas join the list. */
const TASK_SIZE_SLACK_BYTES = 256;

/** A task's weight in a list page as Lambda counts it (its JSON, escaped once more as the body string). */
function pageBytes(task: Task): number {
  return Buffer.byteLength(JSON.stringify(JSON.stringify(task))) + TASK_SIZE_SLACK_BYTES;
}

/**
 * The owner index is keys-only (plus the never-changing type) so status changes never write it; the
 * items are fetched by key. A status filter is applied after that read, so a page may come back short
 * with a cursor: keep following `nextCursor` until it is absent. A page also ends before its tasks
 * would weigh more than MAX_LIST_PAGE_BYTES (always holding at least one), its cursor at the last task
 * it holds, so the next page goes on exactly there.
 */
export async function listTasks(ctx: StoreContext, rawInput: ListInput): Promise<TaskPage> {
  const input = parseInput(listInput, 'listTasks', rawInput);
  let startKey = input.cursor === undefined ? undefined : decodeCursor(input.cursor, input.owner);
  const tasks: Task[] = [];
  let bytes = 0;
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
    /** The last index entry this page has dealt with: where the next page starts. */
    let position = startKey;
    for (const key of keys) {
      const item = byPk.get(key.pk);
      // Deleted (TTL) between the index read and the item read: nothing to show.
      if (item && (input.status === undefined || item.status === input.status)) {
        const task = toTask(item);
        const size = pageBytes(task);
        if (tasks.length > 0 && bytes + size > MAX_LIST_PAGE_BYTES) return { tasks, nextCursor: encodeCursor(position!) };
        tasks.push(task);
        bytes += size;
      }
      position = key;
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
