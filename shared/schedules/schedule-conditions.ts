/**
 * The named parts of every conditional write to schedule definitions and fire records (the house style
 * of store/conditions.ts): each says which race it closes.
 */
import type { ConditionPart } from '../store/update-expression.js';
import { KEY } from '../table-layout.js';
import type { DefinitionRef } from './schedule-model.js';

/** Creating a schedule: nobody created the name since we read it absent (a concurrent PUT, by this caller or another). */
export const definitionIsNew: ConditionPart = (e) => `attribute_not_exists(${e.name(KEY.partition)})`;

/**
 * Replacing, disabling, deleting or completing a definition, or recording its sync state: it is still
 * the one we read. Same owner and generation: not deleted and created again meanwhile (versions restart
 * with a new creation). Same version: no PUT or DELETE in between. Two PUTs that read the same version
 * compute the same next one; only one may write it, or the table and EventBridge Scheduler could each
 * keep a different definition while both say SYNCED.
 */
export const definitionAsRead =
  (ref: DefinitionRef): ConditionPart =>
  (e) =>
    `${e.name('owner')} = ${e.value(ref.owner)} AND ${e.name('version')} = ${e.value(ref.version)} AND ` +
    (ref.generation === undefined
      ? `attribute_not_exists(${e.name('generation')})`
      : `${e.name('generation')} = ${e.value(ref.generation)}`);

/** Recording a failed tick: only when nothing is recorded for it yet (a success is never overwritten by a failure). */
export const fireIsNew: ConditionPart = (e) => `attribute_not_exists(${e.name(KEY.partition)})`;

/**
 * Recording a tick that enqueued its task: once per tick, whichever node or delivery gets there first;
 * it may replace a failure recorded by an earlier delivery of the same tick, which would otherwise hide
 * the task the retry made.
 */
export const fireNotYetSucceeded: ConditionPart = (e) =>
  `attribute_not_exists(${e.name(KEY.partition)}) OR attribute_exists(${e.name('error')})`;
