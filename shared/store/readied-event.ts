/**
 * The 'task:readied' event for a write that put one task in the ready index (a promotion, recovery's
 * requeue). At the default priority it names the task's ready key, so a claimer (in this process, or an
 * invocation a kick hands it to) takes it with one conditional write and no read of the index, which
 * may not show it yet; at another priority claimers read the partitions, which keeps priority order.
 */
import type { LeaseEventMap } from '../events.js';
import { DEFAULT_PRIORITY, priorityOfReadySortKey } from '../table-layout.js';

export interface ReadyKey {
  type: string;
  readySk: string;
}

export function readiedEvent(
  taskId: string | undefined,
  byKey: ReadyKey | undefined,
): LeaseEventMap['task:readied'] {
  if (taskId === undefined) return {};
  return byKey && priorityOfReadySortKey(byKey.readySk) === DEFAULT_PRIORITY ? { taskId, byKey } : { taskId };
}
