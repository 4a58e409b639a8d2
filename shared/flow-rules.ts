/**
 * Flows as pure rules: the limits of one flow, what a parent does when its children's ends have all
 * been counted, whether a child's end fails its parent, and when recovery looks at a waiting parent
 * again. No I/O and no clock reads: every rule takes `now` from its caller (the writes: store/child-ends.ts,
 * store/flow-transitions.ts).
 *
 * A parent waits in WAITING_CHILDREN with a counter of its children that have not ended
 * (`childrenPending`). Each child's end is counted on the parent once: the count write adds the
 * child's number to the parent's set `childrenEnded` and requires it absent, so a resent or repeated
 * count (the worker's, then recovery's repair) changes nothing. When the counter reaches 0 one more
 * write makes the parent QUEUED (or FAILED, when a child that is not optional failed).
 */
import { TaskStatus } from './task-model.js';

/** At most this many tasks in one flow below its root (children, and theirs). */
export const MAX_FLOW_TASKS = 1_000;
/** At most this many levels of parents above a leaf (a root with children is depth 1). */
export const MAX_FLOW_DEPTH = 4;
/** A flow's (or a handler's children's) puts written at once: 1,000 take a few seconds, not 1,000 round trips in turn. */
export const FLOW_PARALLEL_PUTS = 25;
/** At most this many children from one `ctx.enqueueChildren` call, and on one parent in all. */
export const MAX_CHILDREN = 1_000;

/**
 * Whether a task item at a child's id is a child of this life of its parent: its mark
 * (`parentCreatedAt`) is the parent's `createdAt`. An id comes back when the parent's idempotency key
 * is used again after its record expired (and TTL had not yet removed it and its children): the
 * children of the earlier life carry the earlier parent's mark, and are neither counted nor read as
 * the new one's. A child written before the mark existed is taken as of this life, as it was.
 */
export function isChildOfThisLife(
  child: { parentCreatedAt?: number | undefined },
  parent: { createdAt: number },
): boolean {
  return child.parentCreatedAt === undefined || child.parentCreatedAt === parent.createdAt;
}

/** What a waiting parent needs for its readiness decision. */
export interface WaitingParent {
  status: TaskStatus;
  childrenPending?: number;
  childFailures?: number;
  childFailure?: string;
}

export type Readiness =
  | { action: 'wait' }
  | { action: 'queue' }
  | { action: 'fail'; error: string }
  /** Not waiting (already ready, cancelled, ...): nothing to do. */
  | { action: 'none' };

/** What a parent does now: wait for more children, become QUEUED, or fail because a child did. */
export function decideReadiness(parent: WaitingParent): Readiness {
  if (parent.status !== TaskStatus.WAITING_CHILDREN) return { action: 'none' };
  if ((parent.childrenPending ?? 0) > 0) return { action: 'wait' };
  if ((parent.childFailures ?? 0) > 0)
    return {
      action: 'fail',
      error: `CHILD_FAILED: ${parent.childFailure ?? 'a child that is not optional did not succeed'}`,
    };
  return { action: 'queue' };
}

/** A child's end as its parent counts it. */
export interface EndedChild {
  id: string;
  type: string;
  status: TaskStatus;
  optional?: boolean;
  error?: string;
}

/** Whether this end fails the parent: FAILED or CANCELLED, and not marked optional. */
export function failsParent(child: EndedChild): boolean {
  return !child.optional && (child.status === TaskStatus.FAILED || child.status === TaskStatus.CANCELLED);
}

/** The parent's error text for a child that failed it (its start: the parent keeps the last one's inline). */
export function childFailureText(child: EndedChild): string {
  const why = child.error === undefined ? '' : `: ${child.error}`;
  return `child ${child.id} (${child.type}) ended ${child.status}${why}`.slice(0, 200);
}

/** The longest wait between recovery's looks at a waiting parent (the shortest is `flowCheckMs`). */
export const FLOW_CHECK_MAX_MS = 30 * 60_000;

/**
 * When recovery next looks at a waiting parent whose children's counts it has checked `checks` times:
 * `baseMs` (the setting flowCheckMs, a minute by default), then doubling to half an hour. A look reads only the children not yet counted, and counts
 * those that ended without being counted (their writer died between the two writes).
 */
export function nextFlowCheck(now: number, checks: number, baseMs: number): number {
  return now + Math.min(FLOW_CHECK_MAX_MS, baseMs * 2 ** Math.min(checks, 16));
}

/**
 * How long after a parent began to wait a child that is not in the table counts as ended FAILED
 * (CHILD_MISSING): a flow's send that failed part way without an idempotency key to complete it, or a
 * handler that waited after a child's put failed. Longer than any send takes, so a flow still being
 * written is never judged.
 */
export const CHILD_MISSING_AFTER_MS = 15 * 60_000;

/** The end recovery counts for child `index` of `parentId` that was never written. */
export function missingChild(
  parentId: string,
  id: string,
  index: number,
): EndedChild & {
  parentId: string;
  childIndex: number;
} {
  return {
    id,
    type: '(never written)',
    status: TaskStatus.FAILED,
    parentId,
    childIndex: index,
    error:
      'CHILD_MISSING: it was never written (a send of its flow, or its parent’s enqueue, failed part way)',
  };
}
