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
}

/**
 * The parent's children 0..count-1, with their results: their items, then the result items they name.
 * An item of an earlier life of the parent's id (isChildOfThisLife) is not one of them.
 */
export async function readChildren(
  ctx: StoreContext,
  parent: { id: string; createdAt: number },
  count: number,
): Promise<ChildView[]> {
  const ids = Array.from({ length: count }, (_, i) => childTaskId(parent.id, i));
  const items = (await readItems<TaskItem>(ctx, ids.map(taskKey))).filter((child) =>
    isChildOfThisLife(child, parent),
  );
  const byId = new Map(items.map((i) => [i.id, i]));
  const apart = items.flatMap((i) =>
    [i.resultToken, i.errorToken]
      .filter((t): t is number => t !== undefined)
      .map((t) => ({ [KEY.partition]: taskKey(i.id)[KEY.partition]!, [KEY.sort]: outcomeSortKey(t) })),
  );
  const outcomes = apart.length === 0 ? [] : await readItems<OutcomeItem>(ctx, apart);
  const outcomeOf = new Map(outcomes.map((o) => [`${o.pk} ${o.sk}`, o]));
  const body = (item: TaskItem, token: number | undefined) =>
    token === undefined
      ? undefined
      : outcomeOf.get(`${taskKey(item.id)[KEY.partition]} ${outcomeSortKey(token)}`);
  return ids.flatMap((id) => {
    const item = byId.get(id);
    // Not there: a flow's send that failed part way (its key's resend writes it), or expired, or of an
    // earlier life of the parent's id.
    if (!item) return [];
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
        ...('result' in task ? { result: task.result } : {}),
        ...(task.error === undefined ? {} : { error: task.error }),
      },
    ];
  });
}
