/**
 * One typed stream of lifecycle steps. The store, the worker and recovery emit; metrics, logs, the
 * chaos history and users subscribe (e.g. `events.on('task:finished', ...)` for "task failed for
 * good"). Instrumentation used to be called separately at each step and shaped return types
 * (`ClaimResult.recovered` existed for the chaos history); now a step is emitted once.
 */

import type { TaskCost } from './store/task-cost.js';
export type OutcomeWriteKind = 'complete' | 'fail' | 'finish-cancel' | 'release' | 'wait-children';
export type RecoveryAction = 'requeued' | 'failed' | 'cancelled';
/** Where an attempt left its task: a final status, back in the queue for another attempt, or given back unspent. */
export type FinishedStatus =
  'SUCCESS' | 'FAILED' | 'CANCELLED' | 'RETRYING' | 'RELEASED' | 'WAITING_CHILDREN';

export interface LeaseEventMap {
  /** Before a claim write is sent: a writer killed in flight leaves its outcome unknown. */
  'claim:intent': { taskId: string };
  'claim:won': {
    taskId: string;
    type: string;
    token: number;
    leaseUntil: number;
    attempt: number;
    /** The start's time as the claim wrote it (`startedAt`): what a rate limit counts. */
    startedAt: number;
  };
  /** One claim round's result (lost races are billed writes that did no work). */
  'claim:round': { claimed: number; lostRaces: number };
  renew: {
    taskId: string;
    token: number;
    outcome: 'renewed' | 'cancel-requested' | 'lost' | 'error';
    leaseUntil?: number;
  };
  /** The heartbeat timer fired, this late behind its schedule (a blocked event loop shows here). */
  heartbeat: { lagMs: number };
  'lease:lost': { taskId: string; token: number };
  'handler:start': { taskId: string; token: number; type: string; queueWaitMs: number };
  'handler:end': { taskId: string; token: number; durationMs: number };
  /** Sent before the request, so a holder killed while its write was in flight is still seen. */
  'write:sent': { taskId: string; token: number; write: OutcomeWriteKind };
  'write:answered': {
    taskId: string;
    token: number;
    write: OutcomeWriteKind;
    outcome: 'ok' | 'refused' | 'error';
    status?: string;
  };
  /** Before a recovery fix is sent. */
  'recover:intent': { taskId: string };
  /** A recovery fix applied (by the sweep, or by a claimer taking over a dead holder's slot). */
  'recover:fix': { taskId: string; token: number; leaseUntil: number; action: RecoveryAction };
  /**
   * A write may have put a task in the ready index: claimers sharing this stream (or a child of it)
   * look at every partition again at once.
   */
  'task:readied': {
    taskId?: string;
    /**
     * Set when the write put the task in the ready index at the default priority (a promotion): a
     * claimer in this process may take it by this key (one conditional write) without reading the index.
     */
    byKey?: { type: string; readySk: string };
  };
  /** An operator resumed a paused type: its waiting tasks may be claimed again (the kick starts a worker). */
  'type:resumed': { type: string };
  /** A new task was written (not an idempotent repeat): the kick on enqueue starts a worker for it. */
  'task:enqueued': {
    taskId: string;
    type: string;
    availableAt: number;
    /**
     * Its key in the ready index when it entered it at once at the default priority: a claimer may take
     * it by this key (one conditional write) without reading the index, which may not show it yet.
     */
    readySk?: string;
    /** It waits in a rotation (a group's, or an owner's fair share): no shard of its type holds it. */
    rotated?: boolean;
  };
  /** A delayed task or a retry moved into the ready index by this process's timekeeper (worker/timekeeper.ts). */
  'task:promoted': { taskId: string };
  /**
   * A task reached a final status or went back to wait for another attempt: emitted once, by whoever's
   * write applied (the worker; recovery, for a dead holder's task; a cancel request, for a queued task).
   */
  'task:finished': {
    taskId: string;
    type: string;
    status: FinishedStatus;
    by: 'worker' | 'recovery' | 'request';
    error?: string;
    durationMs?: number;
    /** The task's owner (every writer says it: the outcome counters count per owner, stats/). */
    owner?: string;
    /** Everything the task cost so far, as its outcome write recorded it (by the worker). */
    cost?: TaskCost;
  };
}

export type LeaseEventName = keyof LeaseEventMap;
export type LeaseListener<K extends LeaseEventName> = (event: LeaseEventMap[K]) => void;

/** What a listener that throws is reported to (a listener's bug must never break the lease path). */
export type ListenerErrorSink = (name: LeaseEventName, error: unknown) => void;

/** The default sink: one process warning per event name, so a broken listener is seen but never floods. */
function warnOncePerEvent(): ListenerErrorSink {
  const warned = new Set<LeaseEventName>();
  return (name, error) => {
    if (warned.has(name)) return;
    warned.add(name);
    process.emitWarning(
      `a '${name}' listener threw (${error instanceof Error ? error.message : String(error)}); later errors of this listener are not reported`,
      'LeaseholdListenerWarning',
    );
  };
}

export class LeaseEvents {
  private readonly listeners = new Map<LeaseEventName, Set<(event: never) => void>>();

  /** `parent`: every event emitted here is emitted there too (a worker's own stream inside the process's). */
  constructor(
    private readonly onListenerError: ListenerErrorSink = warnOncePerEvent(),
    private readonly parent?: LeaseEvents,
  ) {}

  /**
   * A stream of its own whose events also reach this one: a worker counts its own figures on its
   * child, while the process's subscribers (histories, users) hear every worker.
   */
  child(): LeaseEvents {
    return new LeaseEvents(this.onListenerError, this);
  }

  /** Subscribes; returns the unsubscribe function. */
  on<K extends LeaseEventName>(name: K, listener: LeaseListener<K>): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener as (event: never) => void);
    return () => set.delete(listener as (event: never) => void);
  }

  /** Every listener runs synchronously, in subscription order; one that throws does not stop the rest. */
  emit<K extends LeaseEventName>(name: K, event: LeaseEventMap[K]): void {
    this.parent?.emit(name, event);
    const set = this.listeners.get(name);
    if (!set) return;
    for (const listener of set) {
      try {
        (listener as LeaseListener<K>)(event);
      } catch (error) {
        this.onListenerError(name, error);
      }
    }
  }
}
