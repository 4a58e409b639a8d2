/**
 * One page of a list read from the owner index: the index (keys only, plus the never-changing type)
 * names the items, which are then read by key. Tasks and schedule definitions are both listed this way.
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

/** Index pages read at most per call, so a filter (a rare status, say) cannot turn one request into a long scan. */
const MAX_PAGES_PER_LIST = 10;

export interface OwnerIndexList<I, E> {
  /** Names the list in a bad-cursor error. */
  operation: string;
  /** The owner-index partition to read. */
  partition: string;
  /** Where the caller's cursor says to go on, already checked. */
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
  const { type } = list;
  let startKey = list.cursor;
  const entries: E[] = [];
  let bytes = 0;
  for (let page = 0; page < MAX_PAGES_PER_LIST; page++) {
    const from = startKey;
    const query = () =>
      ctx.doc.send(
        new QueryCommand({
          TableName: ctx.tableName,
          IndexName: INDEX.owner.name,
          KeyConditionExpression: '#o = :o',
          ...(type ? { FilterExpression: '#t = :t' } : {}),
          ExpressionAttributeNames: { '#o': INDEX.owner.partition, ...(type ? { '#t': 'type' } : {}) },
          ExpressionAttributeValues: { ':o': list.partition, ...(type ? { ':t': type } : {}) },
          ...(list.newestFirst ? { ScanIndexForward: false } : {}),
          Limit: list.limit - entries.length,
          ...(from ? { ExclusiveStartKey: from } : {}),
        }),
      );
    // Only the first query starts at the caller's cursor; later ones at DynamoDB's own keys.
    const out = await fromCursor(query, page === 0 && from !== undefined, list.operation);
    const keys = ((out.Items ?? []) as OwnerIndexKey[]).filter(list.lists);
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
    /** The last index entry this page has dealt with: where the next page starts. */
    let position = from;
    for (const key of keys) {
      const item = byKey.get(tableKey(key.pk, key.sk));
      // Absent: deleted (TTL or by its owner) between the index read and the item read, so nothing to show.
      const entry = item === undefined ? undefined : list.show(item);
      if (entry !== undefined) {
        const size = list.weight(entry);
        if (entries.length > 0 && bytes + size > MAX_LIST_PAGE_BYTES)
          return { entries, nextCursor: encodeCursor(position!) };
        entries.push(entry);
        bytes += size;
      }
      position = key;
    }
    startKey = out.LastEvaluatedKey as OwnerIndexKey | undefined;
    if (!startKey || entries.length >= list.limit) break;
  }
  return startKey ? { entries, nextCursor: encodeCursor(startKey) } : { entries };
}

/** An item's table key as one map key (JSON, so no separator can be forged by a key's text). */
const tableKey = (pk: string, sk: string) => JSON.stringify([pk, sk]);
