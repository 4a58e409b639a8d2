/**
 * What wakes a worker between its polls, and what tells it to read again: a task readied or enqueued
 * by a write in this process (taken by key by one worker with room, or its partition read first), a
 * promotion, a retry or a release of its own. The pause between polls lives here too, so a wake-up
 * that comes while no pause waits is not lost: the next pause ends at once.
 */
import type { LeaseEventMap, LeaseEvents } from '../events.js';
import type { ClaimState } from '../store/claim-state.js';
import { shardForId } from '../table-layout.js';
import type { TimerSet } from './timers.js';

/** The wait between polls, ended early by a wake-up. One per worker. */
export class PollPause {
  private wake: (() => void) | undefined;
  /** A wake-up came while no pause was waiting: the next pause looks again at once instead. */
  private pending = false;

  constructor(
    private readonly timers: TimerSet,
    /** A pause skipped for a wake-up: what the worker forgets (partitions it found empty). */
    private readonly onSkipped: () => void,
  ) {}

  /** Whether a pause is under way. */
  get waiting(): boolean {
    return this.wake !== undefined;
  }

  /** Ends a pause under way (a task ended, a stop): none under way, nothing. */
  interrupt(): void {
    this.wake?.();
  }

  /** Ends a pause under way, or makes the next one end at once. */
  wakeUp(): void {
    if (this.wake) this.wake();
    else this.pending = true;
  }

  pause(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      this.onSkipped();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = this.timers.timeout(() => done(), ms);
      const done = () => {
        this.timers.clear(timer);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
    });
  }
}

/** In-process enqueues and promotions a worker took (each goes to one worker of the process). */
const takenByAWorker = new WeakSet<object>();

export interface RunSignalsDeps {
  memory: ClaimState;
  types: readonly string[];
  pause: PollPause;
  /** Whether the worker has a free slot (only then does it take a task by key). */
  hasRoom: () => boolean;
  now: () => number;
}

/** One run's view of the signals: whether its next round must read, and how long it has been idle. */
export class RunSignals {
  /** Claim rounds in a row that won nothing: the idle polls back off (poll-rules.ts, idlePollWait). */
  idlePolls = 0;
  /** The next round reads the ready partitions whatever the look gate says (RunOptions.lookGate). */
  mustRead: boolean;
  /** Counts lookAgain calls, so one that came during a claim round is not undone by the round's end. */
  private calls = 0;
  /** Tasks this worker was handed by key: their 'task:readied' wakes it without re-reading every partition. */
  private readonly offeredIds = new Set<string>();

  constructor(
    private readonly deps: RunSignalsDeps,
    mustRead: boolean,
  ) {
    this.mustRead = mustRead;
  }

  get lookAgainCalls(): number {
    return this.calls;
  }

  /**
   * Look at every partition again, and at once if the worker is waiting for its next poll: an enqueue
   * in this process starts its task within milliseconds, not half a poll interval. A task readied
   * while a round is in flight may sit in a partition that round already marked empty: the next pause
   * is then skipped and the marks forgotten again.
   */
  lookAgain = (): void => {
    this.deps.memory.forgetDrained();
    this.idlePolls = 0;
    this.mustRead = true;
    this.calls++;
    this.deps.pause.wakeUp();
  };

  /** Subscribes to the process's stream and the worker's own; returns the unsubscribe. */
  listen(processEvents: LeaseEvents, own: LeaseEvents): () => void {
    const offs = [
      processEvents.on('task:readied', (readied) => this.onReadied(readied)),
      processEvents.on('task:enqueued', (enqueued) => this.onEnqueued(enqueued)),
      own.on('task:promoted', this.lookAgain),
      own.on('task:finished', ({ status }) => {
        if (status === 'RETRYING' || status === 'RELEASED') this.lookAgain();
      }),
    ];
    return () => offs.forEach((off) => off());
  }

  /**
   * A task named by key in this process (an enqueue, a promotion): this worker takes it with one write,
   * if it has room; the event is marked so no other worker of the process goes for it too.
   */
  private takeByKey(event: object, task: { id: string; type: string; readySk: string }): boolean {
    if (!this.deps.hasRoom()) return false;
    takenByAWorker.add(event);
    this.deps.memory.offerReady({ ...task, shard: shardForId(task.id) });
    return true;
  }

  /**
   * A write in this process readied a task, or this worker put one back: look at every partition again
   * at once. A promotion names its ready key: one worker serving its type, with room, takes it by key
   * (one write, no read of the index, which may not show it yet); the others leave it.
   */
  private onReadied(readied: LeaseEventMap['task:readied']): void {
    const { taskId, byKey } = readied;
    if (taskId !== undefined && this.offeredIds.delete(taskId)) return this.deps.pause.wakeUp();
    if (taskId !== undefined && byKey !== undefined) {
      if (takenByAWorker.has(readied) || !this.deps.types.includes(byKey.type)) return;
      if (this.takeByKey(readied, { id: taskId, ...byKey })) return this.deps.pause.wakeUp();
    }
    this.lookAgain();
  }

  /**
   * A task enqueued in this process: one worker serving its type takes it by key in its next round, or
   * between the reads of the round under way (before the readied wake-up); or, without its key (another
   * priority), reads its partition first. One only: workers sharing a process that all went for it
   * would collide on it.
   */
  private onEnqueued(enqueued: LeaseEventMap['task:enqueued']): void {
    if (enqueued.availableAt > this.deps.now() || !this.deps.types.includes(enqueued.type)) return;
    if (takenByAWorker.has(enqueued)) return;
    if (enqueued.readySk !== undefined) {
      const { taskId: id, type, readySk } = enqueued;
      if (this.takeByKey(enqueued, { id, type, readySk })) this.offeredIds.add(id);
    } else if (this.deps.pause.waiting && enqueued.rotated !== true) {
      takenByAWorker.add(enqueued);
      this.deps.memory.lookFirst(enqueued.type, shardForId(enqueued.taskId));
    }
  }
}
