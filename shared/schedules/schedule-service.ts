/**
 * Recurring schedules: definitions in the table (the source of truth), mirrored to EventBridge
 * Scheduler in AWS, and fires that enqueue the schedule's task once per tick, whoever fires it.
 */
import { randomUUID } from 'node:crypto';
import { describeError, IdempotencyConflictError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { TaskSubmitter } from '../tasks/task-submitter.js';
import { ownerSchema, parseInput } from '../task-inputs.js';
import * as z from 'zod';
import { fireTimes, isOneTime, parseExpression } from './schedule-expression.js';
import { missedTicks, nextTick } from './fire-history.js';
import { ScheduleConflictError, ScheduleNotFoundError } from './schedule-errors.js';
import { parseScheduleInput } from './schedule-input.js';
import {
  fireIdempotencyKey,
  refOf,
  scheduleNameSchema,
  type FireRecord,
  type ScheduleDefinition,
} from './schedule-model.js';
import { SchedulePublisher } from './schedule-publisher.js';
import { listOwnedSchedules, type SchedulePage } from './schedule-list.js';
import type { ScheduleStore } from './schedule-store.js';
import type { SchedulerSync } from './scheduler-sync.js';

export {
  ScheduleConflictError,
  ScheduleNotFoundError,
  ScheduleRejectedError,
  ScheduleSyncError,
} from './schedule-errors.js';

export type FireOutcome =
  | { fired: true; taskId: string; created: boolean }
  | { fired: false; reason: 'unknown-schedule' | 'disabled' | 'stale-generation' };

/** Which tick of which definition a fire is for (what a schedule's target input carries). */
export interface FireRequest {
  owner: string;
  name: string;
  /** The creation of the name the delivery was scheduled by; undefined only for the local ticker's own reads. */
  generation: string | undefined;
  scheduledTime: number;
}

/** Attempts at a conditional write that keeps meeting a concurrent change before giving up with a ScheduleConflictError. */
const MAX_WRITE_ATTEMPTS = 3;
/** A tick counts as missed once a delivery had time to arrive (EventBridge retries take minutes). */
const MISSED_AFTER_MS = 120_000;

export class ScheduleService {
  private readonly publisher: SchedulePublisher;

  constructor(
    private readonly store: ScheduleStore,
    private readonly sync: SchedulerSync,
    private readonly submitter: TaskSubmitter,
    private readonly clock: Clock,
  ) {
    this.publisher = new SchedulePublisher(store, sync);
  }

  /** True when no EventBridge Scheduler is configured and running stacks fire the ticks themselves. */
  get evaluatedLocally(): boolean {
    return this.sync.mode === 'local';
  }

  /**
   * Creates or replaces a schedule; refuses a bad expression, time zone, task type or payload with what
   * to fix, and a definition EventBridge Scheduler refuses (ScheduleRejectedError) without changing anything.
   */
  async put(
    name: string,
    owner: string,
    body: unknown,
  ): Promise<{ schedule: ScheduleDefinition; created: boolean }> {
    // Fires enqueue as the owner: an owner enqueue would refuse must not get a schedule that fails at every tick.
    parseInput(z.object({ owner: ownerSchema }), 'putSchedule', { owner });
    const input = parseScheduleInput(name, body, this.submitter.registry, this.clock.now());
    for (let attempt = 1; ; attempt++) {
      const existing = await this.store.get(owner, name);
      const now = this.clock.now();
      const schedule: ScheduleDefinition = {
        ...input,
        name,
        owner,
        generation: existing ? existing.generation : randomUUID(),
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
        version: (existing?.version ?? 0) + 1,
        syncState: this.sync.mode === 'local' ? 'LOCAL' : 'PENDING',
      };
      if (await this.store.put(schedule, existing && refOf(existing))) {
        if (this.sync.mode === 'local') return { schedule, created: existing === undefined };
        const published = await this.publisher.publish(schedule, existing);
        if (!published)
          throw new ScheduleConflictError(
            name,
            'was deleted by a concurrent request just after this one saved it',
          );
        return { schedule: published, created: existing === undefined };
      }
      // Created, replaced or deleted since we read it: read it again and build on what is there now.
      if (attempt >= MAX_WRITE_ATTEMPTS)
        throw new ScheduleConflictError(name, 'kept changing under concurrent requests');
    }
  }

  async get(name: string, owner: string): Promise<ScheduleDefinition> {
    parseInput(scheduleNameSchema, 'getSchedule', name);
    const def = await this.store.get(owner, name);
    if (!def) throw new ScheduleNotFoundError(name);
    return def;
  }

  /** A page of the owner's schedules by name (reads only theirs; see schedule-list.ts). */
  async list(
    owner: string,
    page: { limit?: number; cursor?: string | undefined } = {},
  ): Promise<SchedulePage> {
    return listOwnedSchedules(this.store.ctx, owner, page.limit ?? 100, page.cursor);
  }

  /** Disables first (fires stop at once), then deletes in EventBridge, then the definition. */
  async delete(name: string, owner: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const def = await this.get(name, owner);
      if (await this.store.disable(refOf(def))) {
        // Locally there is no EventBridge schedule to remove, nor to bring in step when a put got in between.
        if (this.sync.mode === 'local' ? await this.deleteLocal(def) : await this.publisher.unpublish(def))
          return;
        throw new ScheduleConflictError(
          name,
          'was replaced by a concurrent save while being deleted, and was not deleted',
        );
      }
      // A put replaced it since we read it: delete what is there now.
      if (attempt >= MAX_WRITE_ATTEMPTS)
        throw new ScheduleConflictError(name, 'kept changing under concurrent requests');
    }
  }

  /** Deletes the definition a delete disabled; false when a concurrent put replaced it meanwhile (it then stays). */
  private async deleteLocal(def: ScheduleDefinition): Promise<boolean> {
    if (await this.store.delete(refOf(def))) return true;
    // Gone: a concurrent delete finished first, or our delete applied and only its answer was lost.
    return (await this.store.get(def.owner, def.name)) === undefined;
  }

  /**
   * One tick of a schedule. Enqueues with the key `schedule:<name>:<scheduled time>`, so a second
   * delivery (EventBridge is at-least-once), a retry or another node firing the same tick finds the
   * first task instead of making a second. A one-time schedule is completed by its tick. A delivery
   * scheduled by an earlier creation of the name (deleted and created again since) fires nothing.
   */
  async fire({ owner, name, generation, scheduledTime }: FireRequest): Promise<FireOutcome> {
    const def = await this.store.get(owner, name);
    if (!def) return { fired: false, reason: 'unknown-schedule' };
    if (def.generation !== generation) return { fired: false, reason: 'stale-generation' };
    if (!def.enabled) return { fired: false, reason: 'disabled' };
    const idempotencyKey = fireIdempotencyKey(name, scheduledTime);
    let outcome: FireOutcome;
    try {
      const { task, created } = await this.submitter.enqueue({
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
      if (error instanceof IdempotencyConflictError)
        outcome = { fired: true, taskId: error.existing.id, created: false };
      else {
        await this.store.recordFire(def, {
          scheduledTime,
          firedAt: this.clock.now(),
          error: describeError(error),
        });
        throw error;
      }
    }
    await this.store.recordFire(def, { scheduledTime, firedAt: this.clock.now(), taskId: outcome.taskId });
    if (isOneTime(def.expression)) {
      const expression = parseExpression(def.expression, def.timezone);
      // Its one tick (not a late delivery of a tick an earlier definition had): done. A put meanwhile wins.
      if (expression.kind === 'at' && Math.abs(expression.at - scheduledTime) < 1000)
        await this.store.complete(refOf(def), this.clock.now());
    }
    return outcome;
  }

  /** Recent fires of this definition's generation, newest first, and the ticks in that span that have no fire (missed). */
  async fires(name: string, owner: string, limit = 20): Promise<{ fires: FireRecord[]; missed: number[] }> {
    const def = await this.get(name, owner);
    const fires = await this.store.fires(def, limit);
    // A disabled (or completed) schedule expects no ticks. Else the listed span: back to the oldest fire
    // shown when the list is full, else to the last change.
    if (!def.enabled) return { fires, missed: [] };
    const after = fires.length === limit ? fires.at(-1)!.scheduledTime - 1 : def.updatedAt;
    const missed = missedTicks(
      parseExpression(def.expression, def.timezone),
      def.updatedAt,
      fires,
      after,
      this.clock.now() - MISSED_AFTER_MS,
    );
    return { fires, missed };
  }

  /** The newest fire of a definition, to place its next rate tick on (one small read). */
  async latestFire(def: ScheduleDefinition): Promise<FireRecord | undefined> {
    return (await this.store.fires(def, 1))[0];
  }

  /** The next tick after now, for display; with `latest` (see latestFire) a rate tick is placed on the fires seen. */
  nextFire(def: ScheduleDefinition, latest?: FireRecord): number | undefined {
    if (!def.enabled) return undefined;
    return nextTick(parseExpression(def.expression, def.timezone), def.updatedAt, this.clock.now(), latest);
  }

  /**
   * The ticks due in (after, until] for every enabled schedule: what a local ticker fires. Reads only
   * the definitions' timings (no payloads). A definition whose ticks cannot be computed is left out and
   * reported to `onBroken`, so it cannot hold up the others.
   */
  async dueTicks(
    after: number,
    until: number,
    onBroken?: (name: string, error: unknown) => void,
  ): Promise<FireRequest[]> {
    const defs = (await this.store.timings()).filter((d) => d.enabled);
    return defs.flatMap((d) => {
      try {
        return fireTimes(parseExpression(d.expression, d.timezone), after, until, d.updatedAt, 100).map(
          (t) => ({ owner: d.owner, name: d.name, generation: d.generation, scheduledTime: t }),
        );
      } catch (error) {
        onBroken?.(d.name, error);
        return [];
      }
    });
  }
}
