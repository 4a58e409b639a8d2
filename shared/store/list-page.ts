/**
 * One page of a list read from the owner index: the index (keys only, plus the never-changing type)
 * names the items, which are then read by key. Tasks and schedule definitions are both listed this way.
 *
 * A list may span several index partitions (a task owner's OWNER_SHARDS shards, table-layout.ts): each
 * is read in the list's order and the reads are merged by the index sort key, which is one total order
 * over the whole list (`<createdAt>#<id>` for tasks, the name for schedules). So a position in the list
 * is one sort key, and a cursor is that key: the next page reads every partition from just past it.
 * Nothing is skipped or repeated, also when entries are added between pages (a new task sorts before
 * the position, newest first, so it shows on the next list from the top, not in this one).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { INDEX, KEY } from '../table-layout.js';
import type { StoreContext } from './context.js';
import { encodeCursor, fromCursor, type OwnerIndexKey } from './list-cursor.js';
import { readItems } from './task-reads.js';

/**
 * The most a page of a list may weigh. The API's Lambda may return at most 6 MB (6,291,456 bytes) from a
 * synchronous invocation, and API Gateway answers 500 to anything larger; a task can weigh about 330 KB
 * (payload 256 KB, result 64 KB, error), so 100 of them would not fit. What Lambda counts is its result
 * object, in which the JSON body is itself a JSON string: every quote and backslash of the body counts
 * twice. Measured that way, 5 MB leaves a megabyte for the envelope (status, headers, `nextCursor`).
 */
export const MAX_LIST_PAGE_BYTES = 5 * 1024 * 1024;

/**
 * Merge rounds per call (each reads, in parallel, the partitions that ran out), so a filter (a rare
 * status, say) cannot turn one request into a long scan: at most this many Queries per partition.
 */
const MAX_ROUNDS_PER_LIST = 10;

/** An owner-index entry as a Query returns it: the keys, and the type the index projects. */
type IndexEntry = OwnerIndexKey & { type?: string };

export interface OwnerIndexList<I, E> {
  /** Names the list in a bad-cursor error. */
  operation: string;
  /** The list's name, which its cursors carry in `ownerPk` (decodeCursor refuses another list's). */
  listKey: string;
  /** The owner-index partitions holding the list, merged by the index sort key. */
  partitions: readonly string[];
  /** Where the caller's cursor says to go on, already checked: the last entry an earlier page dealt with. */
  cursor?: OwnerIndexKey;
  limit: number;
  /** Newest first (descending index sort key); else ascending. */
  newestFirst?: boolean;
  /** Only index entries of this type (the index projects it, so this filters before any item read). */
  type?: string;
  /** Whether an index entry is one of this list's (a partition may hold entries of other kinds). */
  lists: (key: OwnerIndexKey) => boolean;
  /** What the page shows for an item, or undefined to leave it out (filtered out, or changed since the index read). */
  show: (item: I) => E | undefined;
  /** An entry's weight in the page as Lambda counts it. */
  weight: (entry: E) => number;
}

export interface ListPage<E> {
  entries: E[];
  nextCursor?: string;
}

/** What has been read of one partition of the list, and not yet taken into the merge. */
interface PartitionRead {
  partition: string;
  /** Read, in list order, not yet merged. */
  buffered: IndexEntry[];
  /** Where DynamoDB says the partition goes on (its LastEvaluatedKey), once read. */
  next?: Record<string, unknown>;
  reads: number;
}

/** Read to its end: nothing buffered and nothing more to read. */
const exhausted = (p: PartitionRead) => p.buffered.length === 0 && p.reads > 0 && p.next === undefined;
/** Must be read (again) before the merge may take anything: it may hold the next entry in list order. */
const needsRead = (p: PartitionRead) => p.buffered.length === 0 && (p.reads === 0 || p.next !== undefined);

/**
 * How many entries to ask each of `partitions` partitions for when `want` more are needed. Entries are
 * spread evenly over a task owner's shards (by a hash of the id), so each holds about want / partitions
 * of the next `want`; half again plus two makes a second round rare (a partition that runs out is read
 * again, so this is cost, not correctness). One partition is asked for exactly `want`.
 */
export const perPartitionLimit = (want: number, partitions: number) =>
  Math.min(want, Math.ceil((want * 1.5) / partitions) + 2);

/**
 * Up to `limit` entries from `cursor` on. A page may come back short with a cursor (filters apply after
 * the index read): callers follow `nextCursor` until it is absent. A page also ends before its entries
 * would weigh more than MAX_LIST_PAGE_BYTES (always holding at least one), its cursor at the last entry
 * it holds, so the next page goes on exactly there.
 */
export async function readOwnerIndexPage<I extends object, E>(
  ctx: StoreContext,
  list: OwnerIndexList<I, E>,
): Promise<ListPage<E>> {
  const reads: PartitionRead[] = list.partitions.map((partition) => ({ partition, buffered: [], reads: 0 }));
  const order = list.newestFirst ? -1 : 1;
  /** Whether entry `a` comes before `b` in the list: DynamoDB's order, UTF-8 bytes of the sort key. */
  const precedes = (a: IndexEntry, b: IndexEntry) =>
    order * Buffer.compare(Buffer.from(a.ownerSk), Buffer.from(b.ownerSk)) < 0;
  const entries: E[] = [];
  let bytes = 0;
  /** The last index entry this call has dealt with (shown, filtered out or gone): where the next page starts. */
  let position = list.cursor;
  const page = (): ListPage<E> =>
    position !== undefined && !reads.every(exhausted)
      ? { entries, nextCursor: encodeCursor({ ...position, ownerPk: list.listKey }) }
      : { entries };

  for (let round = 0; round < MAX_ROUNDS_PER_LIST && entries.length < list.limit; round++) {
    const want = list.limit - entries.length;
    const stale = reads.filter(needsRead);
    await Promise.all(
      stale.map((read) => readPartition(ctx, list, read, perPartitionLimit(want, reads.length))),
    );
    // The next `want` entries in list order, while every partition that is not read to its end has one
    // buffered: one that ran out may hold an entry before any other's, so the merge stops there.
    const batch: IndexEntry[] = [];
    while (batch.length < want && !reads.some(needsRead)) {
      let first: PartitionRead | undefined;
      for (const read of reads)
        if (read.buffered.length > 0 && (!first || precedes(read.buffered[0]!, first.buffered[0]!)))
          first = read;
      if (!first) break;
      batch.push(first.buffered.shift()!);
    }
    const keys = batch.filter((k) => list.lists(k) && (list.type === undefined || k.type === list.type));
    const items = await readItems<I>(
      ctx,
      keys.map((k) => ({ [KEY.partition]: k.pk, [KEY.sort]: k.sk })),
    );
    const byKey = new Map(
      items.map((i) => [
        tableKey(
          (i as Record<string, unknown>)[KEY.partition] as string,
          (i as Record<string, unknown>)[KEY.sort] as string,
        ),
        i,
      ]),
    );
    const kept = new Set(keys);
    for (const key of batch) {
      const item = kept.has(key) ? byKey.get(tableKey(key.pk, key.sk)) : undefined;
      // Absent: not of this list, or deleted (TTL or by its owner) between the index read and the item read.
      const entry = item === undefined ? undefined : list.show(item);
      if (entry !== undefined) {
        const size = list.weight(entry);
        if (entries.length > 0 && bytes + size > MAX_LIST_PAGE_BYTES)
          return { entries, nextCursor: encodeCursor({ ...position!, ownerPk: list.listKey }) };
        entries.push(entry);
        bytes += size;
      }
      position = key;
    }
    if (reads.every(exhausted)) break;
  }
  return page();
}

/**
 * Reads the next `limit` entries of one partition: from just past the caller's cursor at first (a key
 * condition on the sort key, so it holds for every partition of the list), then from where DynamoDB
 * said the partition goes on.
 */
async function readPartition<I, E>(
  ctx: StoreContext,
  list: OwnerIndexList<I, E>,
  read: PartitionRead,
  limit: number,
): Promise<void> {
  const from = list.cursor;
  const query = () =>
    ctx.doc.send(
      new QueryCommand({
        TableName: ctx.tableName,
        IndexName: INDEX.owner.name,
        KeyConditionExpression: from ? `#o = :o AND #s ${list.newestFirst ? '<' : '>'} :s` : '#o = :o',
        ExpressionAttributeNames: {
          '#o': INDEX.owner.partition,
          ...(from ? { '#s': INDEX.owner.sort } : {}),
        },
        ExpressionAttributeValues: { ':o': read.partition, ...(from ? { ':s': from.ownerSk } : {}) },
        ...(list.newestFirst ? { ScanIndexForward: false } : {}),
        Limit: limit,
        ...(read.next ? { ExclusiveStartKey: read.next } : {}),
      }),
    );
  // Only a partition's first query starts at the caller's cursor; later ones at DynamoDB's own keys.
  const out = await fromCursor(query, read.reads === 0 && from !== undefined, list.operation);
  read.reads++;
  read.buffered.push(...((out.Items ?? []) as IndexEntry[]));
  read.next = out.LastEvaluatedKey;
}

/** An item's table key as one map key (JSON, so no separator can be forged by a key's text). */
const tableKey = (pk: string, sk: string) => JSON.stringify([pk, sk]);
