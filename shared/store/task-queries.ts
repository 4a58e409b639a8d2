/**
 * Reads for callers: one task by id, its children and its stored steps, and a caller's tasks newest
 * first with filters and a cursor.
 */
import * as z from 'zod';
import { TaskNotFoundError } from '../errors.js';
import { MAX_CHILDREN } from '../flow-rules.js';
import type { Task } from '../task-model.js';
import type { StoreContext } from './context.js';
import { readChildren, type ChildView } from './children-reads.js';
import { deadline } from './dynamo.js';
import { readSteps, type StoredStep } from './steps.js';
import { readTaskItem } from './task-reads.js';
import { listInput, parseInput, taskRefInput, type ListInput } from '../task-inputs.js';
import { decodeCursor, keyString, MAX_PARTITION_KEY_BYTES, type OwnerIndexKey } from './list-cursor.js';
import { MAX_LIST_PAGE_BYTES, readOwnerIndexPage } from './list-page.js';
import { readTaskWithBody } from './task-body.js';
import { taskOwnerPartitions } from '../table-layout.js';
import { toTask, type TaskItem } from './task-item.js';

/** Reads a task; with `owner`, another owner's task is reported as not found (no existence leak). */
export async function getTask(ctx: StoreContext, rawInput: { id: string; owner?: string }): Promise<Task> {
  const { id, owner } = parseInput(taskRefInput, 'getTask', rawInput);
  // The task item and the items holding its payload and long result or error, in one Query.
  const read = await readTaskWithBody(ctx, id);
  if (!read || (owner !== undefined && read.item.owner !== owner)) throw new TaskNotFoundError(id);
  return toTask(read.item, read);
}

/** The task item alone (one GetItem), checked as getTask checks it: another owner's task is not found. */
async function ownedTaskItem(
  ctx: StoreContext,
  operation: string,
  rawInput: { id: string; owner?: string },
): Promise<TaskItem> {
  const { id, owner } = parseInput(taskRefInput, operation, rawInput);
  const item = await readTaskItem(ctx, id, deadline(ctx.config.requestDeadlineMs));
  if (!item || (owner !== undefined && item.owner !== owner)) throw new TaskNotFoundError(id);
  return item;
}

/**
 * A task's children (GET /tasks/{id}/children), numbered 0..total-1, those that exist, with their
 * results and errors; at most MAX_CHILDREN (a parent's limit). None for a task without children.
 */
export async function getChildren(
  ctx: StoreContext,
  rawInput: { id: string; owner?: string },
): Promise<ChildView[]> {
  const item = await ownedTaskItem(ctx, 'getChildren', rawInput);
  const count = Math.min(item.childCount ?? 0, MAX_CHILDREN);
  return count === 0 ? [] : readChildren(ctx, item, count, { resultBudgetBytes: MAX_LIST_PAGE_BYTES });
}

/** A task's stored steps (GET /tasks/{id}/steps), in the order they were stored; only this task's (its `createdAt`). */
export async function getSteps(
  ctx: StoreContext,
  rawInput: { id: string; owner?: string },
): Promise<StoredStep[]> {
  const item = await ownedTaskItem(ctx, 'getSteps', rawInput);
  const steps = await readSteps(ctx, { id: item.id, createdAt: item.createdAt });
  return [...steps.values()].sort((a, b) => a.storedAt - b.storedAt || a.name.localeCompare(b.name));
}

/** Re-exported for those that import it from here (test/api-list-size.test.ts). */
export { MAX_LIST_PAGE_BYTES } from './list-page.js';

export interface TaskPage {
  tasks: Task[];
  nextCursor?: string;
}

/**
 * A cursor of this list is the position of one task in it: its table key (TASK#<id>, TASK), the owner
 * (the list's name; the task's index entry is in one of the owner's shards) and its owner-index sort
 * key (<createdAt>#<id>). Anything else (empty keys, other partitions, oversized strings) is refused
 * before DynamoDB sees it. The next page reads every shard from just past that sort key.
 */
const ID = '[A-Za-z0-9_-]{1,64}';
const cursorSchema: z.ZodType<OwnerIndexKey> = z
  .object({
    pk: z.string().regex(new RegExp(`^TASK#${ID}$`)),
    sk: z.literal('TASK'),
    ownerPk: keyString(MAX_PARTITION_KEY_BYTES),
    ownerSk: z.string().regex(new RegExp(`^\\d{1,16}#${ID}$`)),
  })
  .strict()
  .refine((k) => k.ownerSk.slice(k.ownerSk.indexOf('#') + 1) === k.pk.slice('TASK#'.length));
/** Per task, on top of what is measured: the API shows times as ISO-8601 text, longer than epoch numbers, and commas join the list. */
const TASK_SIZE_SLACK_BYTES = 256;

/** A task's weight in a list page as Lambda counts it (its JSON, escaped once more as the body string); see MAX_LIST_PAGE_BYTES. */
function pageBytes(task: Task): number {
  return Buffer.byteLength(JSON.stringify(JSON.stringify(task))) + TASK_SIZE_SLACK_BYTES;
}

/**
 * The owner index is keys-only (plus the never-changing type) so status changes never write it; the
 * owner's OWNER_SHARDS partitions are read in parallel and merged newest first, and the items are
 * fetched by key. A status filter is applied after that read, so a page may come back short
 * with a cursor: keep following `nextCursor` until it is absent. A page also ends before its tasks
 * would weigh more than MAX_LIST_PAGE_BYTES (always holding at least one), its cursor at the last task
 * it holds, so the next page goes on exactly there.
 */
export async function listTasks(ctx: StoreContext, rawInput: ListInput): Promise<TaskPage> {
  const input = parseInput(listInput, 'listTasks', rawInput);
  const { entries: tasks, ...next } = await readOwnerIndexPage(ctx, {
    operation: 'listTasks',
    listKey: input.owner,
    // Every shard of the owner (a producer's enqueues spread over them), merged newest first.
    partitions: taskOwnerPartitions(input.owner),
    cursor:
      input.cursor === undefined
        ? undefined
        : decodeCursor(input.cursor, cursorSchema, input.owner, 'listTasks'),
    limit: input.limit,
    newestFirst: true,
    type: input.type,
    // The index also holds schedule definitions, under a prefix no task owner may have (inputs.ts); only tasks belong here.
    lists: (key) => key.pk.startsWith('TASK#'),
    show: (item: TaskItem) =>
      input.status === undefined || item.status === input.status ? toTask(item) : undefined,
    weight: pageBytes,
  });
  return { tasks, ...next };
}
