/**
 * A caller's schedules, a page at a time: the owner index's `SCHEDULES#<owner>` partition (keys only)
 * names them, and only those definitions are read. So one owner's list never reads another owner's
 * definitions, however many or large those are.
 */
import * as z from 'zod';
import type { StoreContext } from '../store/context.js';
import {
  decodeCursor,
  keyString,
  MAX_PARTITION_KEY_BYTES,
  type OwnerIndexKey,
} from '../store/list-cursor.js';
import { readOwnerIndexPage } from '../store/list-page.js';
import type { ScheduleDefinition } from './schedule-model.js';
import { SCHEDULE_OWNER_PREFIX } from '../task-inputs.js';
import { definitionKey, fromItem, isDefinitionPartition, ownerPartition } from './schedule-store.js';

const OPERATION = 'listSchedules';
/** Room per definition for what the API adds (ISO times, nextFireAt, sync) and the list's commas. */
const DEFINITION_SIZE_SLACK_BYTES = 512;

export interface SchedulePage {
  schedules: ScheduleDefinition[];
  nextCursor?: string;
}

/**
 * A cursor of this list is exactly the owner-index key of one definition: its table key
 * (SCHEDULES#<n>, `<owner> NUL <name>`), SCHEDULES#<owner>, its name.
 */
const NAME = /^[0-9a-zA-Z._-]{1,64}$/;
const cursorSchema: z.ZodType<OwnerIndexKey> = z
  .object({
    pk: z.string().refine(isDefinitionPartition),
    sk: z.string(),
    ownerPk: keyString(MAX_PARTITION_KEY_BYTES).refine((pk) => pk.startsWith(SCHEDULE_OWNER_PREFIX)),
    ownerSk: z.string().regex(NAME),
  })
  .strict()
  .refine((k) => {
    const key = definitionKey(k.ownerPk.slice(SCHEDULE_OWNER_PREFIX.length), k.ownerSk);
    return k.pk === key.pk && k.sk === key.sk;
  });

/** A definition's weight in a page as Lambda counts it (its JSON, escaped again as the body string); see MAX_LIST_PAGE_BYTES. */
const pageBytes = (def: ScheduleDefinition) =>
  Buffer.byteLength(JSON.stringify(JSON.stringify(def))) + DEFINITION_SIZE_SLACK_BYTES;

/**
 * Up to `limit` of the owner's schedules by name, from `cursor` on. A page also ends before it would
 * weigh more than MAX_LIST_PAGE_BYTES (a definition may hold a 256 KB payload; Lambda answers at most
 * 6 MB), and may come back short with a cursor: follow `nextCursor` until it is absent. The owner
 * index is eventually consistent on AWS: a schedule created a moment ago may not be listed yet.
 */
export async function listOwnedSchedules(
  ctx: StoreContext,
  owner: string,
  limit: number,
  cursor?: string,
): Promise<SchedulePage> {
  const partition = ownerPartition(owner);
  const { entries: schedules, ...next } = await readOwnerIndexPage(ctx, {
    operation: OPERATION,
    listKey: partition,
    // Definitions are few per owner, and written only by PUT and DELETE: one partition per owner.
    partitions: [partition],
    cursor: cursor === undefined ? undefined : decodeCursor(cursor, cursorSchema, partition, OPERATION),
    limit,
    lists: (key) => isDefinitionPartition(key.pk),
    // The key names the owner: an item read by it is this owner's (checked all the same).
    show: (item: Record<string, unknown>) => (item.owner === owner ? fromItem(item) : undefined),
    weight: pageBytes,
  });
  return { schedules, ...next };
}
