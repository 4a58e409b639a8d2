/**
 * Cursors of paged lists: the last owner-index entry a page dealt with, as base64url JSON, its
 * `ownerPk` the list's name (a list may span several index partitions, list-page.ts: the next page
 * reads each of them from just past the entry's sort key). A cursor comes back
 * from the caller, so it is input like any other: it must have exactly the shape this list writes and
 * belong to the caller, or the request is a 400 that says to start again. A key DynamoDB refuses
 * anyway (its ValidationException on ExclusiveStartKey) is the same 400, never a 500.
 */
import * as z from 'zod';
import { ValidationError } from '../errors.js';

/**
 * An owner-index position: the table's keys and the index sort key of the last item a page dealt
 * with. In a cursor, `ownerPk` is the list's name (the owner for tasks); in an index entry, its partition.
 */
export interface OwnerIndexKey {
  pk: string;
  sk: string;
  ownerPk: string;
  ownerSk: string;
}

/** DynamoDB's limits on key values (bytes, UTF-8), which a forged cursor could otherwise exceed. */
export const MAX_PARTITION_KEY_BYTES = 2048;
export const MAX_SORT_KEY_BYTES = 1024;

/** A key string DynamoDB accepts: not empty (it refuses empty key values), and within its size. */
export const keyString = (maxBytes: number) =>
  z
    .string()
    .min(1)
    .refine((s) => Buffer.byteLength(s, 'utf8') <= maxBytes);

export function encodeCursor(key: OwnerIndexKey): string {
  return Buffer.from(
    JSON.stringify({ pk: key.pk, sk: key.sk, ownerPk: key.ownerPk, ownerSk: key.ownerSk }),
  ).toString('base64url');
}

const notACursor = (operation: string) =>
  new ValidationError(operation, [
    { path: 'cursor', message: 'is not a cursor from an earlier page of this list; start again without one' },
  ]);

/** The key in `cursor` when it has the shape `schema` describes and is in `ownerPk`'s partition; else a ValidationError on `cursor`. */
export function decodeCursor(
  cursor: string,
  schema: z.ZodType<OwnerIndexKey>,
  ownerPk: string,
  operation: string,
): OwnerIndexKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const key = schema.safeParse(parsed);
  if (!key.success || key.data.ownerPk !== ownerPk) throw notACursor(operation);
  return key.data;
}

/**
 * Sends the first query of a page that starts at a caller's cursor. DynamoDB refuses an
 * ExclusiveStartKey it cannot use with a ValidationException; from a cursor the caller sent, that is
 * bad input (a 400 saying to start again), not our failure.
 */
export async function fromCursor<T>(
  send: () => Promise<T>,
  startsAtCursor: boolean,
  operation: string,
): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (startsAtCursor && (error as { name?: string } | undefined)?.name === 'ValidationException')
      throw notACursor(operation);
    throw error;
  }
}
