/**
 * Debounce: enqueues with the same key (per owner and type) within `windowMs` of each other collapse
 * into one task, due `windowMs` after the last of them, with the last payload. Once that task starts,
 * the next enqueue of the key makes a new one.
 *
 * A key has generations. A small pointer item (`DEBOUNCE#<digest of owner, type, key>`) holds the
 * current generation; generation g's task has a deterministic id (ids.ts debounceTaskId), so enqueuers
 * racing on one generation meet at the same item. An enqueue reads the pointer (consistent), then:
 * - joins generation g's task with one conditional update (neverStarted: QUEUED, no attempt spent),
 *   which moves its due time and payload (transitions.ts debounceJoined);
 * - if that task is not there, creates it (a put with itemIsNew; one refused meets the racer's task and
 *   joins it);
 * - if it started (or ended, or was cancelled), moves the pointer to g + 1 (generationAsSeen, so two
 *   enqueuers move it once) and goes round again.
 * No step needs a transaction: a crash between them leaves at most a generation without a task, which
 * the next enqueue creates.
 */
import { LeaseholdError } from '../errors.js';
import { debouncePointerId, debounceTaskId, requestFingerprint } from '../ids.js';
import { KEY, taskKey } from '../table-layout.js';
import { writeTargetOf, type StoreContext } from './context.js';
import { conditionalUpdate, readItem } from './conditional-write.js';
import { generationAsSeen } from './conditions.js';
import { bodyExpiry, fitsInline, payloadSortKey } from './body-layout.js';
import { expireBody, putBody } from './task-body.js';
import { toTask, type TaskItem } from './task-item.js';
import { asUpdate, debounceJoined } from './transitions.js';
import { newTask, putNewTask, type EnqueueResult, type ParsedEnqueue } from './new-task.js';
import { Expression } from './update-expression.js';

/** Rounds of read, then join, create or move on: more means other enqueuers keep moving the key's task. */
const MAX_ROUNDS = 8;

const pointerKey = (input: ParsedEnqueue, key: string) => ({
  [KEY.partition]: `DEBOUNCE#${debouncePointerId(input.owner, input.type, key)}`,
  [KEY.sort]: 'GENERATION',
});

export async function enqueueDebounced(
  ctx: StoreContext,
  input: ParsedEnqueue,
  debounce: { key: string; windowMs: number },
): Promise<EnqueueResult> {
  const target = writeTargetOf(ctx, 'request');
  const pointer = pointerKey(input, debounce.key);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const seen = await readItem<{ generation?: number }>(target, pointer);
    const generation = seen?.generation ?? 0;
    const id = debounceTaskId(input.owner, input.type, debounce.key, generation);
    const joined = await join(ctx, input, id, debounce.windowMs);
    if (joined.outcome === 'joined') return { task: joined.task, created: false, joined: true };
    if (joined.outcome === 'changed') continue; // another join moved it: read again and join after it
    if (joined.outcome === 'missing') {
      const created = await create(ctx, input, id);
      if (created) return { task: created, created: true };
      continue; // another enqueue created it first: join it
    }
    // Started (or over): the key's next enqueue is a new task, in the next generation.
    await conditionalUpdate(
      target,
      pointer,
      new Expression().require(generationAsSeen(generation)).assign({ generation: generation + 1 }),
      { resends: 1 },
    );
  }
  throw new DebounceContendedError(debounce.key);
}

/**
 * Joins task `id` if it has not started: its due time moves to windowMs from now and it takes this
 * enqueue's payload. A payload kept apart is written first under a name of its own (the task then names
 * it); the one the join replaced is marked for TTL. `changed`: the task moved since it was read (another
 * join): read again.
 */
async function join(
  ctx: StoreContext,
  input: ParsedEnqueue,
  id: string,
  windowMs: number,
): Promise<
  { outcome: 'joined'; task: ReturnType<typeof toTask> } | { outcome: 'missing' | 'started' | 'changed' }
> {
  const now = ctx.clock.now();
  const current = await readItem<TaskItem>(writeTargetOf(ctx, 'request'), taskKey(id));
  if (!current) return { outcome: 'missing' };
  if (!waitsUnstarted(current)) return { outcome: 'started' };
  const availableAt = now + windowMs;
  const payloadText = JSON.stringify(input.payload ?? null);
  let payload: Record<string, unknown>;
  let written: string | undefined;
  if (fitsInline(payloadText)) {
    payload = {
      payload: payloadText,
      payloadBytes: undefined,
      payloadUntil: undefined,
      requestHash: undefined,
    };
  } else {
    // Named by this enqueue alone: a resend writes the same item, no other request names it.
    written = requestFingerprint({ payload: input.payload ?? null, request: ctx.newId() });
    const payloadUntil = bodyExpiry(availableAt, ctx.config);
    await putBody(ctx, id, payloadSortKey(written), { payload: payloadText }, payloadUntil, 'request');
    payload = {
      payload: undefined,
      payloadBytes: Buffer.byteLength(payloadText),
      payloadUntil,
      requestHash: written,
    };
  }
  const joined = await conditionalUpdate<TaskItem>(
    writeTargetOf(ctx, 'request'),
    taskKey(id),
    asUpdate(debounceJoined(current, payload, availableAt, now)),
    { resends: 1, needCurrent: true },
  );
  if (!joined.applied) {
    // Ours is named by nothing, unless the task names it (our write applied, then moved on unheard).
    if (written !== undefined && joined.current?.requestHash !== written)
      await expireBody(ctx, id, payloadSortKey(written));
    return { outcome: joined.current && waitsUnstarted(joined.current) ? 'changed' : 'started' };
  }
  // The payload item the task named before is named by nothing now (the join replaced exactly that task).
  if (current.payloadBytes !== undefined)
    await expireBody(ctx, id, payloadSortKey(current.requestHash)).catch(() => undefined);
  return { outcome: 'joined', task: toTask(joined.item, { ...joined.item, payload: payloadText }) };
}

/** A task a join may move: waiting, never started (conditions.ts neverStarted). */
const waitsUnstarted = (task: TaskItem) => task.status === 'QUEUED' && task.startedAt === undefined;

/** Creates generation's task `id`; undefined when another enqueue created it first. */
async function create(ctx: StoreContext, input: ParsedEnqueue, id: string) {
  const built = newTask(ctx, input, id, ctx.clock.now());
  const { payloadItem, payloadText } = built;
  const { put } = await putNewTask(ctx, built);
  if (put.applied) return toTask(put.item, { ...put.item, payload: payloadText });
  if (payloadItem) await expireBody(ctx, id, payloadItem.key);
  return undefined;
}

/** Every round met a task that had just started: other enqueuers of the key keep starting its tasks. */
export class DebounceContendedError extends LeaseholdError {
  override name = 'DebounceContendedError';
  override readonly code = 'DEBOUNCE_CONTENDED';
  /** A race with concurrent requests: sent again, it settles. */
  override readonly status = 409;
  constructor(readonly key: string) {
    super(
      `The debounce key "${key}" changed under this enqueue ${MAX_ROUNDS} times; send the request again.`,
    );
  }
}
