/** A task as the API shows it: times in ISO-8601, absent fields left out. */
import type { Task } from '../task-model.js';

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

export function taskJson(task: Task): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: task.id,
    type: task.type,
    status: task.status,
    priority: task.priority,
    group: task.group,
    payload: task.payload,
    payloadBytes: task.payloadBytes,
    attempts: task.attempts,
    maxAttempts: task.maxAttempts,
    createdAt: iso(task.createdAt),
    updatedAt: iso(task.updatedAt),
    availableAt: iso(task.availableAt),
    startedAt: iso(task.startedAt),
    finishedAt: iso(task.finishedAt),
    leaseOwner: task.leaseOwner,
    leaseUntil: iso(task.leaseUntil),
    progress: task.progress,
    progressNote: task.progressNote,
    result: task.result,
    error: task.error,
    parentId: task.parentId,
    optional: task.optional,
    children: task.children,
    cost: task.cost,
  };
  for (const key of Object.keys(out)) if (out[key] === undefined) delete out[key];
  return out;
}
