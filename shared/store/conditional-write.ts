/**
 * The one conditional write every store, slot and lock write goes through. It owns the lost-answer
 * protocol, so each caller learns the truth in one shape: applied (with the item after the write) or
 * not applied (with the item as it stands).
 *
 * Why it is needed: an answer can be lost after DynamoDB applied the write (a dropped connection, our
 * own deadline, a 500 after the write). The SDK then resends it, or we do, and the resend fails its
 * own condition although the first try applied. So each write carries a fresh write id; a refusal
 * that may be the echo of our own first try is settled by the id on the item, read back consistently.
 * (ReturnValuesOnConditionCheckFailure would save that read on AWS, but dynalite ignores it, and
 * decoding its answer would add a second copy of the item converter to every bundle.)
 */
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LeaseholdError } from '../errors.js';
import type { IdGenerator, RandomSource } from '../ids.js';
import { isConditionalCheckFailed, isTransient, wasRetried } from './dynamo.js';
import type { Expression } from './update-expression.js';

/** Where writes go and how long one request may take (the SDK's requestTimeout only warns). */
export interface WriteTarget {
  doc: DynamoDBDocumentClient;
  tableName: string;
  deadlineMs: number;
  newId: IdGenerator;
  random: RandomSource;
}

/** The attribute each write stamps with its own id. */
export const WRITE_ID = 'writeId';

export type WriteResult<T> = { applied: true; item: T } | { applied: false; current: T | undefined };

export interface WriteOptions {
  /**
   * Sends after the first when a request fails in a way that says nothing about the write (our
   * deadline, throttling, a server or network fault). Each resend carries the same write id.
   */
  resends?: number;
  /**
   * On a refusal that is certainly not our own echo, whether the caller needs the current item. A
   * claim that lost a race does not (a read would cost more than the race); a cancel does.
   */
  needCurrent?: boolean;
  /**
   * When no send was answered, whether to read the item to learn if one applied (default true). A
   * renewal skips it: it only needs to know it did not hear back, and every read spends lease time.
   */
  settleUnanswered?: boolean;
}

/**
 * The write's outcome could not be learned: no send was answered (throttled, timed out, failed) and
 * the read-back did not show it applied, or failed too. Sending the request again is safe.
 */
export class WriteOutcomeUnknownError extends LeaseholdError {
  override name = 'WriteOutcomeUnknownError';
  override readonly code = 'WRITE_OUTCOME_UNKNOWN';
  /** Not the caller's input: the table did not answer in time. Sent again, the request settles it. */
  override readonly status = 503;
  override readonly retryAfterSeconds = 1;
  constructor(
    readonly key: Record<string, unknown>,
    readonly writeId: string,
    options: { cause: unknown },
  ) {
    super(
      `A write to ${JSON.stringify(key)} may or may not have applied (write id ${writeId}): DynamoDB did not answer it; try again.`,
      options,
    );
  }

  override callerDetail(): string {
    return `${this.message} Send the request again; with an idempotencyKey a retry cannot make a second task.`;
  }
}

/** An UpdateItem under `expression`'s condition; stamps the write id and returns the item after it. */
export async function conditionalUpdate<T extends object>(
  target: WriteTarget,
  key: Record<string, unknown>,
  expression: Expression,
  options: WriteOptions = {},
): Promise<WriteResult<T>> {
  const writeId = target.newId();
  expression.set(WRITE_ID, writeId);
  const command = new UpdateCommand({
    TableName: target.tableName,
    Key: key,
    ...expression.params(),
    ReturnValues: 'ALL_NEW',
  });
  return send<T>(
    target,
    key,
    writeId,
    options,
    async (signal) => (await target.doc.send(command, { abortSignal: signal })).Attributes as T,
  );
}

/** A PutItem under `expression`'s condition (an expression with conditions only); stamps the write id. */
export async function conditionalPut<T extends object>(
  target: WriteTarget,
  key: Record<string, unknown>,
  item: T,
  expression: Expression,
  options: WriteOptions = {},
): Promise<WriteResult<T>> {
  const writeId = target.newId();
  const stamped = { ...item, ...key, [WRITE_ID]: writeId } as T;
  const command = new PutCommand({ TableName: target.tableName, Item: stamped, ...expression.params() });
  return send<T>(target, key, writeId, options, async (signal) => {
    await target.doc.send(command, { abortSignal: signal });
    return stamped;
  });
}

/** Consistent read of one item, under the deadline. */
export async function readItem<T>(target: WriteTarget, key: Record<string, unknown>): Promise<T | undefined> {
  const out = await target.doc.send(
    new GetCommand({ TableName: target.tableName, Key: key, ConsistentRead: true }),
    { abortSignal: AbortSignal.timeout(target.deadlineMs) },
  );
  return out.Item as T | undefined;
}

async function send<T extends object>(
  target: WriteTarget,
  key: Record<string, unknown>,
  writeId: string,
  options: WriteOptions,
  attempt: (signal: AbortSignal) => Promise<T>,
): Promise<WriteResult<T>> {
  const resends = options.resends ?? 2;
  // True once a request may have reached DynamoDB without our hearing the answer.
  let ambiguous = false;
  let lastError: unknown;
  for (let sent = 0; sent <= resends; sent++) {
    if (sent > 0) await backoff(target, sent);
    try {
      return { applied: true, item: await attempt(AbortSignal.timeout(target.deadlineMs)) };
    } catch (error) {
      lastError = error;
      if (isConditionalCheckFailed(error)) {
        // The only request that reached DynamoDB was refused: no echo of our own to rule out.
        if (!ambiguous && !wasRetried(error) && !options.needCurrent)
          return { applied: false, current: undefined };
        // Our own write id on the item means an earlier send applied and only its answer was lost.
        return settleByReading<T>(target, key, writeId, error, 'refused');
      }
      // A hard failure after an unanswered send says nothing about that send: settle it first.
      if (!isTransient(error)) {
        if (!ambiguous) throw error;
        break;
      }
      ambiguous = true;
    }
  }
  if (options.settleUnanswered === false)
    throw new WriteOutcomeUnknownError(key, writeId, { cause: lastError });
  // Every send failed without an answer: read to learn whether one of them applied.
  return settleByReading<T>(target, key, writeId, lastError, 'unanswered');
}

/**
 * Reads the item back (a few tries): our write id on it means applied. Otherwise, after a refusal the
 * write was refused; after sends that all went unanswered it is still unknown (a send may yet land,
 * and none was refused), so the caller must not take it for a refusal.
 */
async function settleByReading<T>(
  target: WriteTarget,
  key: Record<string, unknown>,
  writeId: string,
  cause: unknown,
  sends: 'refused' | 'unanswered',
): Promise<WriteResult<T>> {
  for (let tries = 0; tries < 3; tries++) {
    if (tries > 0) await backoff(target, tries);
    try {
      const current = await readItem<T>(target, key);
      if (current && (current as Record<string, unknown>)[WRITE_ID] === writeId)
        return { applied: true, item: current };
      if (sends === 'refused') return { applied: false, current };
      break;
    } catch (error) {
      if (!isTransient(error)) throw error;
    }
  }
  throw new WriteOutcomeUnknownError(key, writeId, { cause });
}

/** Exponential backoff with jitter: 50, 100, 200 ms (times 0.5-1). */
function backoff(target: WriteTarget, n: number): Promise<void> {
  return new Promise((r) => setTimeout(r, 25 * 2 ** n * (0.5 + target.random() / 2)));
}
