/**
 * A parent's children as its handler (ctx.children) and the API (GET /tasks/{id}/children) read them:
 * reads only, apart from children.ts's writes under a lease, so the API's bundle leaves those out.
 */
import { isChildOfThisLife } from '../flow-rules.js';
import { childTaskId } from '../ids.js';
import { KEY, taskKey } from '../table-layout.js';
import type { TaskStatus } from '../task-model.js';
import { outcomeSortKey } from './body-layout.js';
import type { StoreContext } from './context.js';
import { readItems } from './task-reads.js';
import type { OutcomeItem } from './task-body.js';
import { toTask, type TaskItem } from './task-item.js';

/** A child as its parent's handler sees it (ctx.children). */
export interface ChildView {
  id: string;
  type: string;
  status: TaskStatus;
  optional?: boolean;
  result?: unknown;
  error?: string;
  /** Its result was kept apart and not read: past the read's byte budget (GET /tasks/{id} of the child brings it). */
  resultOmitted?: true;
}

/** Result items read at once under a byte budget: at most this many past it (20 of 64 KB: 1.3 MB). */
const BUDGETED_CHUNK = 20;

/**
 * The parent's children 0..count-1, with their results: their items, then the result items they name.
 * An item of an earlier life of the parent's id (isChildOfThisLife) is not one of them.
 * `resultBudgetBytes` (the API's answer, which cannot hold more): the result items are read in the
 * children's order until that many bytes are read; the children past it are `resultOmitted`, so 1,000
 * results of 64 KB (64 MB) are never all held by the function. The handler's `ctx.children` reads them all.
 */
export async function readChildren(
  ctx: StoreContext,
  parent: { id: string; createdAt: number },
  count: number,
  options: { resultBudgetBytes?: number } = {},
): Promise<ChildView[]> {
  const ids = Array.from({ length: count }, (_, i) => childTaskId(parent.id, i));
  const items = (await readItems<TaskItem>(ctx, ids.map(taskKey))).filter((child) =>
    isChildOfThisLife(child, parent),
  );
  const byId = new Map(items.map((i) => [i.id, i]));
  const keyOf = (item: TaskItem, token: number) =>
    `${taskKey(item.id)[KEY.partition]} ${outcomeSortKey(token)}`;
  const apart = ids.flatMap((id) => {
    const item = byId.get(id);
    return [item?.resultToken, item?.errorToken]
      .filter((t): t is number => t !== undefined)
      .map((t) => ({ [KEY.partition]: taskKey(id)[KEY.partition]!, [KEY.sort]: outcomeSortKey(t) }));
  });
  const { outcomes, read } = await readOutcomes(ctx, apart, options.resultBudgetBytes);
  const outcomeOf = new Map(outcomes.map((o) => [`${o.pk} ${o.sk}`, o]));
  const body = (item: TaskItem, token: number | undefined) =>
    token === undefined ? undefined : outcomeOf.get(keyOf(item, token));
  return ids.flatMap((id) => {
    const item = byId.get(id);
    // Not there: a flow's send that failed part way (its key's resend writes it), or expired, or of an
    // earlier life of the parent's id.
    if (!item) return [];
    const omitted = item.resultToken !== undefined && !read.has(keyOf(item, item.resultToken));
    const task = toTask(item, {
      ...(item.resultToken === undefined
        ? { result: item.result }
        : { result: body(item, item.resultToken)?.result }),
      error: body(item, item.errorToken)?.error ?? item.error,
    });
    return [
      {
        id,
        type: task.type,
        status: task.status,
        ...(task.optional ? { optional: true } : {}),
        ...('result' in task && !omitted ? { result: task.result } : {}),
        ...(task.error === undefined ? {} : { error: task.error }),
        ...(omitted ? { resultOmitted: true as const } : {}),
      },
    ];
  });
}

/**
 * The outcome items under `keys` (in order), and the keys read: all of them without a budget; with one,
 * chunk by chunk until the texts read pass `budget` bytes. An unread error keeps its start (the task
 * item's `error`).
 */
async function readOutcomes(
  ctx: StoreContext,
  keys: Record<string, string>[],
  budget: number | undefined,
): Promise<{ outcomes: OutcomeItem[]; read: Set<string> }> {
  const name = (k: Record<string, string>) => `${k[KEY.partition]} ${k[KEY.sort]}`;
  if (budget === undefined) {
    const outcomes = keys.length === 0 ? [] : await readItems<OutcomeItem>(ctx, keys);
    return { outcomes, read: new Set(keys.map(name)) };
  }
  const outcomes: OutcomeItem[] = [];
  const read = new Set<string>();
  let bytes = 0;
  for (let i = 0; i < keys.length && bytes <= budget; i += BUDGETED_CHUNK) {
    const chunk = keys.slice(i, i + BUDGETED_CHUNK);
    for (const o of await readItems<OutcomeItem>(ctx, chunk)) {
      bytes += Buffer.byteLength(o.result ?? '') + Buffer.byteLength(o.error ?? '');
      outcomes.push(o);
    }
    for (const k of chunk) read.add(name(k));
  }
  return { outcomes, read };
}
