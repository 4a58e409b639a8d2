/**
 * A task's children and stored steps as the API shows them (GET /tasks/{id}/children, /steps): times in
 * ISO-8601 as in task-json.ts, a step's result parsed from its JSON text. An answer is kept under
 * MAX_LIST_PAGE_BYTES as a list page is: 1,000 children of 64 KB results, or many large steps, would
 * be more than a Lambda may answer (6 MB), so the results past that budget are left out, each entry
 * saying so (`resultOmitted`); GET /tasks/{id} of the child brings its result.
 */
import type { ChildView } from '../store/children-reads.js';
import type { StoredStep } from '../store/steps.js';
import { MAX_LIST_PAGE_BYTES } from '../store/task-queries.js';

/** What an entry weighs in the answer as Lambda counts it (its JSON, escaped once more as the body string). */
const weight = (value: unknown) => Buffer.byteLength(JSON.stringify(JSON.stringify(value)));

/**
 * Each entry with its result while the answer stays within `budget` bytes, in order; past it, the entry
 * without its result and with `resultOmitted: true`. The entries themselves (ids, statuses, errors of at
 * most 4,096 characters) are always counted and always kept.
 */
export function withinBudget<T extends { result?: unknown }>(
  entries: T[],
  budget = MAX_LIST_PAGE_BYTES,
): (Omit<T, 'result'> & { result?: unknown; resultOmitted?: true })[] {
  const bare = entries.map(({ result: _result, ...rest }) => rest);
  let total = bare.reduce((sum, entry) => sum + weight(entry) + 1, 0);
  return entries.map((entry, i) => {
    if (!('result' in entry)) return entry;
    const extra = weight(entry) - weight(bare[i]);
    if (total + extra <= budget) {
      total += extra;
      return entry;
    }
    return { ...bare[i]!, resultOmitted: true as const };
  });
}

export function childrenJson(children: ChildView[]): { children: Record<string, unknown>[] } {
  return {
    children: withinBudget(
      children.map((c) => ({
        id: c.id,
        type: c.type,
        status: c.status,
        ...(c.optional ? { optional: true } : {}),
        ...(c.result === undefined ? {} : { result: c.result }),
        ...(c.error === undefined ? {} : { error: c.error }),
        ...(c.resultOmitted ? { resultOmitted: true as const } : {}),
      })),
    ),
  };
}

export function stepsJson(steps: StoredStep[]): { steps: Record<string, unknown>[] } {
  return {
    steps: withinBudget(
      steps.map((s) => ({
        name: s.name,
        result: JSON.parse(s.result) as unknown,
        token: s.token,
        storedAt: new Date(s.storedAt).toISOString(),
      })),
    ),
  };
}
