/**
 * An in-memory LeaseStore for the worker's tests: the same fencing rules as the DynamoDB store (a
 * write under a lease applies only while its owner and token still hold the task), none of its I/O.
 * Time comes from the injected clock, so the worker runs on fake timers, deterministically. The
 * DynamoDB store keeps its own tests on the emulators; this fake only has to be faithful to the port.
 */
import type { Clock } from '../../shared/clock.js';
import { LeaseLostError } from '../../shared/errors.js';
import { LeaseEvents } from '../../shared/events.js';
import { decideFailure } from '../../shared/lease-rules.js';
import type { ClaimResult } from '../../shared/store/claim.js';
import type { ClaimState } from '../../shared/store/claim-state.js';
import type { ClaimInput, Lease, ProgressReport, RenewInput } from '../../shared/task-inputs.js';
import type { RenewOutcome } from '../../shared/store/lease-writes.js';
import type { FailInput, LeaseStore } from '../../shared/store/ports.js';
import { TaskStatus, type Task } from '../../shared/task-model.js';

export interface FakeTaskInput {
  type: string;
  payload?: unknown;
  maxAttempts?: number;
  timeoutMs?: number;
  priority?: number;
  /** Delay before it is due (it waits as a delayed task until promoted, like a retry). */
  delayMs?: number;
}

interface Held extends Task {
  /** Waiting for its backoff to end; only promote() makes it claimable. */
  delayed: boolean;
}

export class FakeLeaseStore implements LeaseStore {
  readonly events = new LeaseEvents();
  private readonly tasks = new Map<string, Held>();
  private nextId = 0;
  /** Every call by operation name, in order (what the worker asked of its store). */
  readonly calls: { op: string; taskId?: string }[] = [];
  /** Renewals throw this while set (a network partition). */
  renewFault: Error | undefined;
  /** Answers of outcome writes are delayed until this resolves (a slow write). */
  writeGate: Promise<void> | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly config: {
      leaseTimeoutMs: number;
      backoffBaseMs: number;
      backoffMaxMs: number;
      defaultMaxAttempts: number;
    },
  ) {}

  add(input: FakeTaskInput): Task {
    const now = this.clock.now();
    const id = `task-${String(++this.nextId).padStart(4, '0')}`;
    const task: Held = {
      id,
      type: input.type,
      status: TaskStatus.QUEUED,
      priority: input.priority ?? 0,
      payload: input.payload ?? null,
      owner: 'o',
      attempts: 0,
      maxAttempts: input.maxAttempts ?? this.config.defaultMaxAttempts,
      createdAt: now,
      updatedAt: now,
      availableAt: now + (input.delayMs ?? 0),
      leaseToken: 0,
      delayed: (input.delayMs ?? 0) > 0,
      ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
    };
    this.tasks.set(id, task);
    this.events.emit('task:readied', { taskId: id });
    return this.view(task);
  }

  get(id: string): Task {
    return this.view(this.must(id));
  }

  /** A cancel request through the API: a queued task ends at once, a running one waits for its holder. */
  requestCancel(id: string): void {
    const task = this.must(id);
    if (task.status === TaskStatus.QUEUED)
      Object.assign(task, { status: TaskStatus.CANCELLED, finishedAt: this.clock.now() });
    else if (task.status === TaskStatus.RUNNING) task.status = TaskStatus.CANCEL_REQUESTED;
  }

  /** Recovery, or another worker, took the task over: the holder's token no longer holds it. */
  takeOver(id: string, by = 'other-worker'): void {
    const task = this.must(id);
    Object.assign(task, {
      leaseOwner: by,
      leaseToken: task.leaseToken + 1,
      leaseUntil: this.clock.now() + this.config.leaseTimeoutMs,
    });
  }

  async claim(input: ClaimInput, _memory: ClaimState): Promise<ClaimResult> {
    this.calls.push({ op: 'claim' });
    const now = this.clock.now();
    const due = [...this.tasks.values()]
      .filter(
        (t) =>
          t.status === TaskStatus.QUEUED &&
          !t.delayed &&
          t.availableAt <= now &&
          input.types.includes(t.type),
      )
      .sort((a, b) => b.priority - a.priority || a.availableAt - b.availableAt || a.createdAt - b.createdAt);
    const claimed = due.slice(0, input.max).map((task) => {
      this.events.emit('claim:intent', { taskId: task.id });
      Object.assign(task, {
        status: TaskStatus.RUNNING,
        leaseOwner: input.workerId,
        leaseToken: task.leaseToken + 1,
        attempts: task.attempts + 1,
        leaseUntil: now + this.config.leaseTimeoutMs,
        startedAt: now,
        updatedAt: now,
      });
      return { task: this.view(task), lease: this.leaseOf(task) };
    });
    return { claimed, lostRaces: 0 };
  }

  async renew(input: RenewInput): Promise<RenewOutcome[]> {
    this.calls.push({ op: 'renew' });
    if (this.renewFault) throw this.renewFault;
    const leaseUntil = this.clock.now() + this.config.leaseTimeoutMs;
    return input.leases.map((lease): RenewOutcome => {
      const task = this.tasks.get(lease.taskId);
      if (!task || !this.holds(task, lease))
        return { taskId: lease.taskId, outcome: 'lost', current: task && this.view(task) };
      task.leaseUntil = leaseUntil;
      this.storeProgress(task, input.progress?.[lease.taskId]);
      const renewed = { ...lease, leaseUntil };
      return {
        taskId: lease.taskId,
        outcome: task.status === TaskStatus.CANCEL_REQUESTED ? 'cancel-requested' : 'renewed',
        lease: renewed,
      };
    });
  }

  complete(input: { lease: Lease; result?: unknown }): Promise<Task> {
    return this.underLease('complete', input.lease, (task) =>
      Object.assign(task, {
        status: TaskStatus.SUCCESS,
        result: input.result ?? null,
        finishedAt: this.clock.now(),
      }),
    );
  }

  fail(input: FailInput): Promise<Task> {
    return this.underLease('fail', input.lease, (task) => {
      if (task.status === TaskStatus.CANCEL_REQUESTED)
        return Object.assign(task, { status: TaskStatus.CANCELLED, finishedAt: this.clock.now() });
      const now = this.clock.now();
      const policy = input.backoff ?? { baseMs: this.config.backoffBaseMs, maxMs: this.config.backoffMaxMs };
      const outcome = decideFailure(task, now, input.retryable ?? true, policy, () => 0.5);
      this.storeProgress(task, input.progress);
      task.error = input.error;
      if (outcome.status === TaskStatus.FAILED)
        return Object.assign(task, { status: TaskStatus.FAILED, finishedAt: now });
      return Object.assign(task, {
        status: TaskStatus.QUEUED,
        availableAt: outcome.availableAt,
        delayed: outcome.availableAt > now,
      });
    });
  }

  release(input: { lease: Lease; progress?: ProgressReport }): Promise<Task> {
    return this.underLease('release', input.lease, (task) => {
      if (task.status === TaskStatus.CANCEL_REQUESTED)
        return Object.assign(task, { status: TaskStatus.CANCELLED, finishedAt: this.clock.now() });
      this.storeProgress(task, input.progress);
      return Object.assign(task, { status: TaskStatus.QUEUED, attempts: task.attempts - 1 });
    });
  }

  finishCancel(input: { lease: Lease }): Promise<Task> {
    return this.underLease('finishCancel', input.lease, (task) =>
      Object.assign(task, { status: TaskStatus.CANCELLED, finishedAt: this.clock.now() }),
    );
  }

  async promote(input: { id: string }): Promise<boolean> {
    this.calls.push({ op: 'promote', taskId: input.id });
    const task = this.tasks.get(input.id);
    if (!task || !task.delayed || task.status !== TaskStatus.QUEUED || task.availableAt > this.clock.now())
      return false;
    task.delayed = false;
    this.events.emit('task:readied', { taskId: task.id });
    return true;
  }

  private async underLease(op: string, lease: Lease, apply: (task: Held) => void): Promise<Task> {
    this.calls.push({ op, taskId: lease.taskId });
    if (this.writeGate) await this.writeGate;
    const task = this.must(lease.taskId);
    if (!this.holds(task, lease)) throw new LeaseLostError(lease.taskId, lease.token, this.view(task));
    apply(task);
    Object.assign(task, { leaseOwner: undefined, leaseUntil: undefined, updatedAt: this.clock.now() });
    if (task.status === TaskStatus.QUEUED) this.events.emit('task:readied', { taskId: task.id });
    return this.view(task);
  }

  private holds(task: Held, lease: Lease): boolean {
    return (
      (task.status === TaskStatus.RUNNING || task.status === TaskStatus.CANCEL_REQUESTED) &&
      task.leaseOwner === lease.owner &&
      task.leaseToken === lease.token
    );
  }

  private storeProgress(task: Held, progress: ProgressReport | undefined): void {
    if (!progress) return;
    task.progress = progress.fraction;
    if (progress.note === undefined) delete task.progressNote;
    else task.progressNote = progress.note;
  }

  private leaseOf(task: Held): Lease {
    return {
      taskId: task.id,
      type: task.type,
      owner: task.leaseOwner!,
      token: task.leaseToken,
      leaseUntil: task.leaseUntil!,
      sweepAt: task.leaseUntil!,
      shard: 0,
      priority: task.priority,
      createdAt: task.createdAt,
      availableAt: task.availableAt,
      attempts: task.attempts,
      maxAttempts: task.maxAttempts,
      slots: [],
    };
  }

  private must(id: string): Held {
    const task = this.tasks.get(id);
    if (!task) throw new Error(`fake store: no task ${id}`);
    return task;
  }

  private view(task: Held): Task {
    const { delayed: _delayed, ...rest } = task;
    return structuredClone(
      Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)),
    ) as unknown as Task;
  }
}
