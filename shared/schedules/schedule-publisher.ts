/**
 * Keeps EventBridge Scheduler in step with the definition in the table (the source of truth) after a
 * put or delete wrote it. Every request checks, after its Scheduler call, that the table still holds
 * what it sent (a write conditioned on the version). When it does not, a concurrent request changed the
 * definition and its own Scheduler call may have landed first: this one brings Scheduler to what the
 * table holds now. So the last Scheduler call is always followed by a check, and the two end up agreeing.
 */
import { describeError } from '../errors.js';
import { ScheduleRejectedError, ScheduleSyncError } from './schedule-errors.js';
import { refOf, type ScheduleDefinition } from './schedule-model.js';
import type { ScheduleStore } from './schedule-store.js';
import { schedulerRejection, type SchedulerSync } from './scheduler-sync.js';

/** Rounds of "the table moved on, sync what it holds now" before leaving it to the request that moved it. */
const MAX_CATCH_UP_ROUNDS = 3;

export class SchedulePublisher {
  constructor(
    private readonly store: ScheduleStore,
    private readonly sync: SchedulerSync,
  ) {}

  /**
   * Sends a definition a put wrote. Scheduler refusing it is a ScheduleRejectedError, after the table
   * is put back as it was (`previous` restored, or a new name removed): a bad request changes nothing.
   * Any other failure marks it FAILED (ScheduleSyncError: putting the same definition again repairs it).
   * Returns what the table holds afterwards: undefined if a concurrent delete removed it.
   */
  async publish(
    def: ScheduleDefinition,
    previous: ScheduleDefinition | undefined,
  ): Promise<ScheduleDefinition | undefined> {
    try {
      await this.sync.upsert(def);
    } catch (cause) {
      const rejection = schedulerRejection(cause);
      if (rejection === undefined) {
        await this.store.setSyncState(refOf(def), 'FAILED', describeError(cause));
        throw new ScheduleSyncError(def.name, 'save', { cause });
      }
      await this.putBack(def, previous);
      throw new ScheduleRejectedError(def.name, rejection, previous !== undefined, { cause });
    }
    return this.confirm(def);
  }

  /**
   * Deletes the Scheduler schedule of a definition a delete disabled, then the definition itself.
   * False when a concurrent put replaced it meanwhile: it then stays, and Scheduler is brought to it.
   */
  async unpublish(def: ScheduleDefinition): Promise<boolean> {
    try {
      await this.sync.remove(def);
    } catch (cause) {
      throw new ScheduleSyncError(def.name, 'delete', { cause });
    }
    if (await this.store.delete(refOf(def))) return true;
    const latest = await this.store.get(def.owner, def.name);
    // Gone: our delete applied and only its answer was lost (an SDK retry then met its own write).
    if (!latest) return true;
    await this.catchUp(latest);
    return false;
  }

  /** Marks `def` SYNCED if the table still holds it; else syncs whatever it holds now. */
  private async confirm(def: ScheduleDefinition): Promise<ScheduleDefinition | undefined> {
    if (await this.store.setSyncState(refOf(def), 'SYNCED')) return { ...def, syncState: 'SYNCED' };
    const latest = await this.store.get(def.owner, def.name);
    if (!latest) {
      // Deleted meanwhile, perhaps before our upsert landed and re-created the Scheduler schedule.
      await this.removeQuietly(def);
      return undefined;
    }
    return this.catchUp(latest);
  }

  private async catchUp(latest: ScheduleDefinition): Promise<ScheduleDefinition | undefined> {
    let current: ScheduleDefinition | undefined = latest;
    for (let round = 0; current && round < MAX_CATCH_UP_ROUNDS; round++) {
      try {
        await this.sync.upsert(current);
      } catch (cause) {
        await this.store.setSyncState(refOf(current), 'FAILED', describeError(cause));
        throw new ScheduleSyncError(current.name, 'save', { cause });
      }
      if (await this.store.setSyncState(refOf(current), 'SYNCED')) return { ...current, syncState: 'SYNCED' };
      const named = current;
      current = await this.store.get(named.owner, named.name);
      if (!current) await this.removeQuietly(named);
    }
    // Still moving: the request moving it checks after its own Scheduler call, as this one did.
    return current;
  }

  /** Puts the table back as it was before a put that Scheduler refused (Scheduler itself did not change). */
  private async putBack(def: ScheduleDefinition, previous: ScheduleDefinition | undefined): Promise<void> {
    // Versions only grow (the conditions rely on it), so the old content comes back as a newer version.
    if (previous) await this.store.put({ ...previous, version: def.version + 1 }, refOf(def));
    else await this.store.delete(refOf(def));
    // A false answer means a concurrent request replaced our write already: its definition stands.
  }

  private async removeQuietly(def: Pick<ScheduleDefinition, 'owner' | 'name'>): Promise<void> {
    try {
      await this.sync.remove(def);
    } catch {
      // The next put or delete of the name repairs it; the fire handler ignores ticks of unknown schedules.
    }
  }
}
