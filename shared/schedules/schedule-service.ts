/**
 * Recurring schedules: definitions in the table (the source of truth), mirrored to EventBridge
 * Scheduler in AWS, and fires that enqueue the schedule's task once per tick, whoever fires it.
 */
import { IdempotencyConflictError, LeaseholdError, ValidationError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { TaskQueue } from '../tasks/task-queue.js';
import { describeError } from '../worker/outcome.js';
import { parseInput } from '../store/inputs.js';
import { ExpressionError, fireTimes, parseExpression } from './expression.js';
import { fireIdempotencyKey, scheduleBody, scheduleNameSchema, type FireRecord, type ScheduleDefinition } from './schedule-model.js';
import type { ScheduleStore } from './schedule-store.js';
import type { SchedulerSync } from './scheduler-sync.js';

export class ScheduleNotFoundError extends LeaseholdError {
  override name = 'ScheduleNotFoundError';
  override readonly code = 'SCHEDULE_NOT_FOUND';
  constructor(readonly scheduleName: string) {
    super(`No schedule "${scheduleName}" for this caller.`);
  }
}

export class ScheduleNameTakenError extends LeaseholdError {
  override name = 'ScheduleNameTakenError';
  override readonly code = 'SCHEDULE_NAME_TAKEN';
  constructor(readonly scheduleName: string) {
    super(`The schedule name "${scheduleName}" is taken by another caller; choose another name.`);
  }
}

/** The table and EventBridge Scheduler disagree after a failed call; the same request again repairs it. */
export class ScheduleSyncError extends LeaseholdError {
  override name = 'ScheduleSyncError';
  override readonly code = 'SCHEDULE_NOT_SYNCED';
  constructor(
    readonly scheduleName: string,
    readonly action: 'save' | 'delete',
    options: { cause: unknown },
  ) {
    super(
      action === 'save'
        ? `Schedule "${scheduleName}" is saved but EventBridge Scheduler did not accept it (${describeError(options.cause)}); it is marked FAILED. Send the same PUT again to retry.`
        : `Schedule "${scheduleName}" is disabled but EventBridge Scheduler did not delete it (${describeError(options.cause)}). Send the DELETE again to finish.`,
      options,
    );
  }
}

export type FireOutcome = { fired: true; taskId: string; created: boolean } | { fired: false; reason: 'unknown-schedule' | 'disabled' };

export class ScheduleService {
  constructor(
    private readonly store: ScheduleStore,
    private readonly sync: SchedulerSync,
    private readonly queue: TaskQueue,
    private readonly clock: Clock,
  ) {}

  /** True when no EventBridge Scheduler is configured and running stacks fire the ticks themselves. */
  get evaluatedLocally(): boolean {
    return this.sync.mode === 'local';
  }

  /** Creates or replaces a schedule; refuses a bad expression, time zone, task type or payload with what to fix. */
  async put(name: string, owner: string, body: unknown): Promise<{ schedule: ScheduleDefinition; created: boolean }> {
    parseInput(scheduleNameSchema, 'PUT /schedules/{name}', name);
    const input = parseInput(scheduleBody, 'PUT /schedules/{name}', body);
    try {
      parseExpression(input.expression, input.timezone);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      throw new ValidationError('PUT /schedules/{name}', [{ path: /time zone/.test(error.message) ? 'timezone' : 'expression', message: error.message }]);
    }
    try {
      this.queue.registry.parsePayload(input.task.type, input.task.payload, 'PUT /schedules/{name}');
    } catch (error) {
      if (error instanceof ValidationError) throw new ValidationError(error.operation, error.problems.map((p) => ({ ...p, path: `task.${p.path}` })));
      throw error;
    }
    const existing = await this.store.get(name);
    if (existing && existing.owner !== owner) throw new ScheduleNameTakenError(name);
    const now = this.clock.now();
    const schedule: ScheduleDefinition = {
      ...input,
      name,
      owner,
      // Rate schedules tick from creation; replacing a definition keeps its rhythm.
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
      version: (existing?.version ?? 0) + 1,
      syncState: this.sync.mode === 'local' ? 'LOCAL' : 'PENDING',
    };
    if (!(await this.store.put(schedule))) throw new ScheduleNameTakenError(name);
    if (this.sync.mode === 'eventbridge') {
      try {
        await this.sync.upsert(schedule);
      } catch (cause) {
        await this.store.setSyncState(name, schedule.version, 'FAILED', describeError(cause));
        throw new ScheduleSyncError(name, 'save', { cause });
      }
      await this.store.setSyncState(name, schedule.version, 'SYNCED');
      schedule.syncState = 'SYNCED';
    }
    return { schedule, created: existing === undefined };
  }

  async get(name: string, owner: string): Promise<ScheduleDefinition> {
    parseInput(scheduleNameSchema, 'GET /schedules/{name}', name);
    const def = await this.store.get(name);
    if (!def || def.owner !== owner) throw new ScheduleNotFoundError(name);
    return def;
  }

  async list(owner: string): Promise<ScheduleDefinition[]> {
    return (await this.store.list()).filter((d) => d.owner === owner);
  }

  /** Disables first (fires stop at once), then deletes in EventBridge, then the definition. */
  async delete(name: string, owner: string): Promise<void> {
    const def = await this.get(name, owner);
    await this.store.disable(name, def.version);
    try {
      await this.sync.remove(name);
    } catch (cause) {
      throw new ScheduleSyncError(name, 'delete', { cause });
    }
    await this.store.delete(name, owner);
  }

  /**
   * One tick of a schedule. Enqueues with the key `schedule:<name>:<scheduled time>`, so a second
   * delivery (EventBridge is at-least-once), a retry or another node firing the same tick finds the
   * first task instead of making a second.
   */
  async fire(name: string, scheduledTime: number): Promise<FireOutcome> {
    const def = await this.store.get(name);
    if (!def) return { fired: false, reason: 'unknown-schedule' };
    if (!def.enabled) return { fired: false, reason: 'disabled' };
    const idempotencyKey = fireIdempotencyKey(name, scheduledTime);
    let outcome: FireOutcome;
    try {
      const { task, created } = await this.queue.enqueue({
        type: def.task.type,
        owner: def.owner,
        idempotencyKey,
        ...(def.task.payload === undefined ? {} : { payload: def.task.payload }),
        ...(def.task.priority === undefined ? {} : { priority: def.task.priority }),
        ...(def.task.maxAttempts === undefined ? {} : { maxAttempts: def.task.maxAttempts }),
      });
      outcome = { fired: true, taskId: task.id, created };
    } catch (error) {
      // The definition changed between two deliveries of the same tick: the tick already has its task.
      if (error instanceof IdempotencyConflictError) outcome = { fired: true, taskId: error.existing.id, created: false };
      else {
        await this.store.recordFire(name, { scheduledTime, firedAt: this.clock.now(), error: describeError(error) });
        throw error;
      }
    }
    await this.store.recordFire(name, { scheduledTime, firedAt: this.clock.now(), taskId: outcome.taskId });
    return outcome;
  }

  /** Recent fires, newest first, and the ticks in that span that have no fire (missed). */
  async fires(name: string, owner: string, limit = 20): Promise<{ fires: FireRecord[]; missed: number[] }> {
    const def = await this.get(name, owner);
    const fires = await this.store.fires(name, limit);
    const now = this.clock.now();
    // A tick counts as missed once a delivery had time to arrive (EventBridge retries take minutes).
    const settled = now - 120_000;
    const from = fires.length === limit ? fires.at(-1)!.scheduledTime : def.createdAt;
    const expected = fireTimes(parseExpression(def.expression, def.timezone), from - 1, settled, def.createdAt, 1000);
    const seen = new Set(fires.map((f) => f.scheduledTime));
    return { fires, missed: expected.filter((t) => !seen.has(t)).slice(-100) };
  }

  /** The next tick after now, for display. */
  nextFire(def: ScheduleDefinition): number | undefined {
    if (!def.enabled) return undefined;
    const now = this.clock.now();
    return fireTimes(parseExpression(def.expression, def.timezone), now, now + 400 * 86_400_000, def.createdAt, 1)[0];
  }

  /** The ticks due in (after, until] for every enabled schedule: what a local ticker fires. */
  async dueTicks(after: number, until: number): Promise<{ name: string; scheduledTime: number }[]> {
    const defs = (await this.store.list()).filter((d) => d.enabled);
    return defs.flatMap((d) => fireTimes(parseExpression(d.expression, d.timezone), after, until, d.createdAt, 100).map((t) => ({ name: d.name, scheduledTime: t })));
  }
}
