/**
 * Where a task's large parts are kept, as pure rules (the reads and writes are in task-body.ts).
 *
 * DynamoDB bills a write by the larger of the item before and after it, also when its condition
 * fails, so a payload kept in the task item was paid again by every claim, lost claim race, renewal
 * and outcome (a 256 KB payload: about 257 write units per heartbeat). The task item is what the
 * lease path writes; a payload, result or error keeps its place there only when it is small
 * (INLINE_BODY_BYTES), and otherwise goes into an item of its own in the task's partition:
 *
 * - `PAYLOAD` (`PAYLOAD#<request hash>` for an idempotent enqueue): written once, before the task
 *   item, and read once per claim. With the hash in the key two different requests with the same
 *   idempotency key never write the same item: whichever task item wins names its own payload.
 * - `OUTCOME#<lease token>`: a result or a whole error message, written by the holder just before its
 *   outcome write. Keyed by the token, so a stale holder (its lease lost) can only write an item of its
 *   own token, which the task item never points at: the fence holds for these items too.
 *
 * Body items are never rewritten, so they get their TTL when written (bodyExpiry). One whose task item
 * never came (the process died between the two writes), or whose outcome write was refused, is left
 * to that TTL.
 */
import type { LeaseholdConfig } from '../config.js';

/**
 * The most a payload, a result or an error may take in the task item (UTF-8 bytes of its JSON or
 * text). A task item with realistic names (a 60-character role ARN as owner, an idempotency key) is
 * about 700 bytes while it runs; 128 more keeps it within one write unit (1 KB). Payloads that carry
 * a few ids fit; anything larger costs one more read per claim instead of its size on every write.
 */
export const INLINE_BODY_BYTES = 128;

const DAY_MS = 86_400_000;

export const payloadSortKey = (requestHash?: string) =>
  requestHash === undefined ? 'PAYLOAD' : `PAYLOAD#${requestHash}`;
export const outcomeSortKey = (token: number) => `OUTCOME#${token}`;

/**
 * TTL (epoch seconds) of a body item written at `from`: the task may wait up to `maxWaitDays` for its
 * turn and is then kept `retentionDays` after it finishes. A payload's is moved when its task is made
 * due later (payload-lifetime.ts). A task still waiting past it finds its payload gone and fails
 * (PAYLOAD_MISSING) instead of running without it.
 */
export function bodyExpiry(
  from: number,
  config: Pick<LeaseholdConfig, 'retentionDays' | 'maxWaitDays'>,
): number {
  return Math.floor((from + (config.maxWaitDays + config.retentionDays) * DAY_MS) / 1000);
}

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
export const fitsInline = (text: string) => bytes(text) <= INLINE_BODY_BYTES;

/** The start of `text` that fits inline, cut at a character boundary and marked as cut. */
export function inlineSummary(text: string): string {
  if (fitsInline(text)) return text;
  let cut = text.slice(0, INLINE_BODY_BYTES);
  while (bytes(`${cut}…`) > INLINE_BODY_BYTES) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/** The task item's fields for a result, and the body item to write first when it does not fit. */
export interface StoredResult {
  fields: { result: string | undefined; resultToken: number | undefined };
  apart?: { result: string };
}

export function storeResult(text: string, token: number): StoredResult {
  if (fitsInline(text)) return { fields: { result: text, resultToken: undefined } };
  return { fields: { result: undefined, resultToken: token }, apart: { result: text } };
}

/**
 * The task item's fields for an error: the whole text when it fits, else its start (lists show it)
 * and the token whose OUTCOME item holds it all. Without a token (recovery writes no body item) only
 * the start is kept.
 */
export interface StoredError {
  fields: { error: string; errorToken: number | undefined };
  apart?: { error: string };
}

export function storeError(text: string, token?: number): StoredError {
  if (fitsInline(text) || token === undefined)
    return { fields: { error: inlineSummary(text), errorToken: undefined } };
  return { fields: { error: inlineSummary(text), errorToken: token }, apart: { error: text } };
}
