/**
 * Every store, slot, lock and fleet-seat write × every way its answer can go wrong (test/support/fault-injection.ts):
 *
 *   lost-network          applied; the connection drops before the answer (the SDK retries)
 *   lost-deadline         applied; our deadline aborts before the answer (the store resends)
 *   deadline-before       our deadline aborts before the request is sent (never applied)
 *   throttled             ThrottlingException, not applied (the SDK retries)
 *   throughput-exceeded   ProvisionedThroughputExceededException, not applied (the SDK retries)
 *   server-error-before   500 InternalServerError, not applied (the SDK retries)
 *   server-error-after    applied, then 500 InternalServerError (the SDK retries into its own write)
 *   throttled-throughout  every send of the write throttled (SDK and store give up); reads answered
 *   outcome-unknown       applied, every answer lost to our deadline, and every read-back fails
 *
 * For each: the caller learns the truth (applied: the success answer; a single fault never turns into
 * an error; nothing refused the write, so no refusal), nothing is written twice (one task, one attempt,
 * token +1, one slot per limit), nothing is stranded (every leased task, held slot, held lock and held
 * fleet seat belongs to a lease, lock or seat its holder knows of), and every error is a typed one. The state is read
 * back consistently through a client without faults.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  DynamoDBClient,
  DynamoDBServiceException,
  InternalServerError,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { defineConfig, type LeaseholdConfig } from '../shared/config.js';
import {
  IdempotencyConflictError,
  LeaseholdError,
  LeaseLostError,
  TaskNotFoundError,
  TaskStateConflictError,
} from '../shared/errors.js';
import { leaseIsFree } from '../shared/lease-rules.js';
import { LockClient, LockLostError, LockNotAcquiredError, type Lock } from '../shared/locks/lock-client.js';
import type { ClaimResult } from '../shared/store/claim.js';
import { isTransient, documentClientFor } from '../shared/store/dynamo.js';
import type { Lease } from '../shared/task-inputs.js';
import type { RenewOutcome } from '../shared/store/lease-writes.js';
import { ensureTable } from '../shared/store/table-setup.js';
import type { TaskItem } from '../shared/store/task-item.js';
import { TaskStore } from '../shared/store/task-store.js';
import { FleetSeats, type SeatLease } from '../shared/fleet/fleet-seats.js';
import { writeTargetOf } from '../shared/store/context.js';
import type { Task } from '../shared/task-model.js';
import {
  fastRetryStrategy,
  FaultInjector,
  injectFault,
  type FaultHandle,
  type FaultKind,
  type FaultRule,
} from './support/fault-injection.js';
import { ManualClock, sequentialIds } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';

const TYPE = 'job';
const WORKER = 'w';
const LOCK_KEY = 'k';
const credentials = { accessKeyId: 'x', secretAccessKey: 'x' };

let server: TestDynamo;
/** Reads the state back: its own client, no faults. */
let reader: DynamoDBDocumentClient;
let tables = 0;

beforeAll(async () => {
  server = await startTestDynamo();
  reader = documentClientFor(
    new DynamoDBClient({ endpoint: server.endpoint, region: 'us-east-1', credentials }),
  );
});
afterAll(() => server.close());

// ---------------------------------------------------------------------------------------------------
// One world per case: a fresh table, a store and a lock client on a client with the fault injector.

interface World {
  config: LeaseholdConfig;
  clock: ManualClock;
  store: TaskStore;
  locks: LockClient;
  seats: FleetSeats;
  faults: FaultInjector;
  client: DynamoDBClient;
}

async function newWorld(): Promise<World> {
  // A global limit of 2 shows a duplicate take (a second global slot); the type's limit of 1 a blocked type.
  // A long request deadline (still below the heartbeat): on a loaded machine only injected deadlines fire.
  const config = defineConfig({
    tableName: `matrix-${process.pid}-${++tables}`,
    dynamodbEndpoint: server.endpoint,
    globalConcurrency: 2,
    typeConcurrency: `${TYPE}=1`,
    requestDeadlineMs: 9_000,
  });
  const client = new DynamoDBClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials,
    retryStrategy: fastRetryStrategy(3),
  });
  const faults = new FaultInjector(client);
  const doc = documentClientFor(client);
  await ensureTable(client, config.tableName);
  const clock = new ManualClock();
  const store = new TaskStore({ doc, config, clock, newId: sequentialIds('t') });
  const locks = new LockClient({ doc, config, clock, newId: sequentialIds('h') });
  const seats = new FleetSeats({ target: writeTargetOf(store.ctx), clock, random: () => 0.5, cap: 2 });
  return { config, clock, store, locks, seats, faults, client };
}

type Item = Record<string, unknown> & { pk: string; sk: string };
type SlotItem = Item & { holder?: string; leaseUntil?: number; slotToken?: number; taskId?: string };
type LockItem = Item & { holder?: string; leaseUntil?: number; lockToken?: number };
type SeatItem = Item & { holder?: string; until?: number; token?: number };

interface Snapshot {
  now: number;
  tasks: TaskItem[];
  slots: SlotItem[];
  locks: LockItem[];
  seats: SeatItem[];
}

async function snapshot(w: World): Promise<Snapshot> {
  const items: Item[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await reader.send(
      new ScanCommand({ TableName: w.config.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    items.push(...((out.Items ?? []) as Item[]));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return {
    now: w.clock.now(),
    tasks: items.filter((i) => i.sk === 'TASK') as unknown as TaskItem[],
    slots: items.filter((i) => i.pk.startsWith('LIMIT#')),
    locks: items.filter((i) => i.pk.startsWith('LOCK#')),
    seats: items.filter((i) => i.pk === 'FLEET'),
  };
}

const show = (v: unknown) =>
  JSON.stringify(v, (_k, x: unknown) => (x instanceof Error ? `${x.name}: ${x.message}` : x));

/** The one task of the case (a second one would be a duplicate enqueue). */
function theTask(snap: Snapshot): TaskItem {
  if (snap.tasks.length !== 1)
    throw new Error(`expected exactly one task, found ${snap.tasks.length}: ${show(snap.tasks)}`);
  return snap.tasks[0]!;
}

/** The slot a case took of a limit (a case takes at most one per limit; which index is random). */
const slotOf = (snap: Snapshot, scope: 'global' | 'type') =>
  snap.slots.find((s) => s.pk === (scope === 'global' ? 'LIMIT#global' : `LIMIT#type#${TYPE}`));
const theLock = (snap: Snapshot) => snap.locks.find((l) => l.pk === `LOCK#${LOCK_KEY}`);

/** Classifies the task: 'applied' or 'unchanged' by the given predicates, anything else is a wrong state. */
function classify(what: unknown, applied: boolean, unchanged: boolean): State {
  if (applied && !unchanged) return 'applied';
  if (unchanged && !applied) return 'unchanged';
  throw new Error(`neither applied once nor unchanged: ${show(what)}`);
}

const isQueuedAtHead = (t: TaskItem, attempts: number) =>
  t.status === 'QUEUED' &&
  t.attempts === attempts &&
  t.readyPk !== undefined &&
  t.leaseOwner === undefined &&
  t.sweepPk === undefined &&
  t.delayPk === undefined;
const isRunning = (
  t: TaskItem,
  lease: Pick<Lease, 'owner' | 'token'>,
  status: 'RUNNING' | 'CANCEL_REQUESTED' = 'RUNNING',
) =>
  t.status === status &&
  t.leaseOwner === lease.owner &&
  t.leaseToken === lease.token &&
  t.attempts === 1 &&
  t.readyPk === undefined;

// ---------------------------------------------------------------------------------------------------
// Answers that are not thrown errors, made into errors so every row ends the same way.

/** The operation answered "refused" (not allowed, no longer yours) without throwing. */
class Refused extends Error {
  override name = 'Refused';
}
/** The operation answered "nothing done" without claiming a refusal (a claim round that claimed nothing). */
class NothingDone extends Error {
  override name = 'NothingDone';
}
/** A recovery sweep that reported errors. */
class SweepErrors extends Error {
  override name = 'SweepErrors';
  constructor(readonly errors: string[]) {
    super(errors.join('; '));
  }
}

const REFUSALS = [
  LeaseLostError,
  TaskStateConflictError,
  TaskNotFoundError,
  IdempotencyConflictError,
  LockNotAcquiredError,
  Refused,
];
function isRefusal(error: unknown): boolean {
  return (
    REFUSALS.some((c) => error instanceof c) ||
    (error instanceof LockLostError && error.reason === 'taken-over')
  );
}

const SDK_ERROR_NAMES = [
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
];
/** A Leasehold error, or a modelled DynamoDB error, or "nothing done"; never a bare Error, AbortError or TypeError. */
function isTyped(error: unknown): boolean {
  if (error instanceof SweepErrors)
    return error.errors.every((e) =>
      ['WriteOutcomeUnknownError', ...SDK_ERROR_NAMES].some((n) => e.startsWith(`${n}:`)),
    );
  return (
    error instanceof LeaseholdError ||
    error instanceof DynamoDBServiceException ||
    error instanceof NothingDone
  );
}

// ---------------------------------------------------------------------------------------------------
// The operations (rows).

type State = 'applied' | 'unchanged';

interface Setup {
  task?: Task;
  lease?: Lease;
  seat?: SeatLease;
  lock?: Lock;
  before?: number;
}

/** What the caller knows it holds after the operation. */
interface Known {
  /** Leases the caller holds: their tasks are leased to them, their slots held for them. */
  held?: Lease[];
  /** Leases the caller still has but that may be over (the write ending them failed): their slots run out with them. */
  expiring?: Lease[];
  locks?: Lock[];
  seats?: SeatLease[];
}

interface Row {
  name: string;
  /** The write the fault hits. */
  target: Omit<FaultRule, 'fault' | 'after' | 'times'>;
  setup(w: World): Promise<Setup>;
  act(w: World, s: Setup): Promise<unknown>;
  /** The state, from the table: the write applied exactly once, or not at all (throws on anything else). */
  state(snap: Snapshot, s: Setup): State;
  /** The success answer (with the state already known to be 'applied'). */
  answer(value: unknown, s: Setup, snap: Snapshot): void;
  /** What the caller knows it holds: from the answer, or after an error from the setup (and what the table says happened). */
  known(s: Setup, value: unknown, state: State): Known;
  /** A write the store gives up on by design (a slot release: the slot runs out with its lease). */
  mayStayUnapplied?: boolean;
}

/**
 * Tasks go to the type's priority lane (priority 1): a claim finds them with one query instead of
 * reading up to sixteen shard partitions, which keeps two hundred cases fast.
 */
const PRIORITY = 1;
const enqueueTask = (w: World, extra: { maxAttempts?: number; delayMs?: number } = {}) =>
  w.store
    .enqueue({ type: TYPE, owner: 'o', payload: { n: 1 }, priority: PRIORITY, ...extra })
    .then((r) => r.task);

async function claimedTask(w: World, extra: { maxAttempts?: number } = {}): Promise<Setup> {
  const task = await enqueueTask(w, extra);
  const lease = (await w.store.claim({ workerId: WORKER, types: [TYPE], max: 1 })).claimed[0]?.lease;
  if (!lease || lease.slots.length !== 2)
    throw new Error(`setup: expected a claim with two slots, got ${show(lease)}`);
  return { task, lease };
}

const TASK_WRITE = { operation: 'UpdateItem', pk: 'TASK#' } as const;
const SEAT_WRITE = { operation: 'UpdateItem', pk: 'FLEET' } as const;
/** Seats held now (a holder, an expiry ahead). */
const heldSeats = (snap: Snapshot) =>
  snap.seats.filter((x) => x.holder !== undefined && (x.until ?? 0) > snap.now);
const seatIndexOf = (snap: Snapshot) => ({ index: Number(heldSeats(snap)[0]!.sk.slice('SEAT#'.length)) });

const claimRow = (name: string, target: Row['target']): Row => ({
  name,
  target,
  setup: async (w) => ({ task: await enqueueTask(w) }),
  act: async (w) => {
    const r = await w.store.claim({ workerId: WORKER, types: [TYPE], max: 1 });
    if (r.claimed.length === 0)
      throw new NothingDone(`claim round claimed nothing (lost races ${r.lostRaces})`);
    return r;
  },
  state: (snap) => {
    const t = theTask(snap);
    return classify(t, isRunning(t, { owner: WORKER, token: 1 }), isQueuedAtHead(t, 0));
  },
  answer: (value) => {
    const r = value as ClaimResult;
    expect(r.claimed).toHaveLength(1);
    expect(r.claimed[0]!.lease).toMatchObject({ owner: WORKER, token: 1, attempts: 1 });
    expect(r.claimed[0]!.lease.slots.map((s) => [s.scope, s.token])).toEqual([
      ['global', 1],
      [`type#${TYPE}`, 1],
    ]);
  },
  known: (_s, value) => ({ held: value ? (value as ClaimResult).claimed.map((c) => c.lease) : [] }),
});

const renewRow = (name: string, target: Row['target'], decidedBy: 'task' | 'global-slot'): Row => ({
  name,
  target,
  setup: async (w) => {
    const s = await claimedTask(w);
    w.clock.advance(1_000);
    return { ...s, before: s.lease!.leaseUntil };
  },
  act: async (w, s) => {
    const [o] = (await w.store.renew({ leases: [s.lease!] })) as [RenewOutcome];
    if (o.outcome === 'renewed') return o;
    if (o.outcome === 'lost') throw new Refused(`renew answered lost: ${show(o.current)}`);
    if (o.outcome === 'error') throw o.error;
    throw new Error(`unexpected renew outcome ${show(o)}`);
  },
  state: (snap, s) => {
    const t = theTask(snap);
    const renewedUntil = snap.now + 60_000;
    if (!isRunning(t, s.lease!)) throw new Error(`the renewal changed the task: ${show(t)}`);
    const decider = decidedBy === 'task' ? t.leaseUntil : slotOf(snap, 'global')?.leaseUntil;
    return classify({ task: t, slots: snap.slots }, decider === renewedUntil, decider === s.before);
  },
  answer: (value, _s, snap) => {
    const renewedUntil = snap.now + 60_000;
    expect(value).toMatchObject({ outcome: 'renewed', lease: { leaseUntil: renewedUntil, token: 1 } });
    expect([
      theTask(snap).leaseUntil,
      slotOf(snap, 'global')?.leaseUntil,
      slotOf(snap, 'type')?.leaseUntil,
    ]).toEqual([renewedUntil, renewedUntil, renewedUntil]);
  },
  known: (s, value) => ({ held: [value ? (value as { lease: Lease }).lease : s.lease!] }),
});

/** Writes that end a lease (complete, fail, release, finishCancel): on an error the caller still has the lease. */
const endLeaseRow = (
  row: Pick<Row, 'name' | 'setup' | 'act' | 'answer'> & {
    ends: (t: TaskItem) => boolean;
    from?: 'RUNNING' | 'CANCEL_REQUESTED';
    target?: Row['target'];
    decidedBy?: 'task' | 'global-slot';
  },
): Row => ({
  target: row.target ?? TASK_WRITE,
  ...row,
  state: (snap, s) => {
    const t = theTask(snap);
    if (row.decidedBy === 'global-slot') {
      const slot = slotOf(snap, 'global');
      if (!row.ends(t)) throw new Error(`the task write did not apply: ${show(t)}`);
      return classify(slot, slot?.holder === undefined, slot?.holder === WORKER && slot.slotToken === 1);
    }
    return classify(t, row.ends(t) && t.leaseToken === 1, isRunning(t, s.lease!, row.from));
  },
  // After an error, or a slot release given up on, the caller still has the lease; its slots run out with it.
  known: (s, value, state) => (value && state === 'applied' ? {} : { expiring: [s.lease!] }),
  ...(row.decidedBy === 'global-slot' ? { mayStayUnapplied: true } : {}),
});

const completeRow = (name: string, target?: Row['target'], decidedBy?: 'global-slot') =>
  endLeaseRow({
    name,
    ...(target ? { target } : {}),
    ...(decidedBy ? { decidedBy } : {}),
    setup: (w) => claimedTask(w),
    act: (w, s) => w.store.complete({ lease: s.lease!, result: 42 }),
    ends: (t) =>
      t.status === 'SUCCESS' && t.result === '42' && t.leaseOwner === undefined && t.finishedAt !== undefined,
    answer: (v) => expect(v).toMatchObject({ status: 'SUCCESS', result: 42, attempts: 1 }),
  });

const recoveryRow = (name: string, maxAttempts: number, ends: (t: TaskItem) => boolean): Row => ({
  name,
  target: TASK_WRITE,
  setup: async (w) => {
    const s = await claimedTask(w, { maxAttempts });
    w.clock.advance(w.config.leaseTimeoutMs + w.config.clockSkewMs + 1);
    return s;
  },
  act: async (w) => {
    const report = await w.store.recover();
    if (report.errors.length > 0) throw new SweepErrors(report.errors);
    if (report.requeued + report.failed !== 1) throw new Refused(`recovery fixed nothing: ${show(report)}`);
    return report;
  },
  state: (snap, s) => {
    const t = theTask(snap);
    return classify(t, ends(t), isRunning(t, s.lease!));
  },
  answer: (v) =>
    expect(v).toMatchObject(maxAttempts > 1 ? { requeued: 1, failed: 0 } : { requeued: 0, failed: 1 }),
  // The holder is dead: whatever recovery did, nobody but that holder knows of the lease.
  known: (s) => ({ expiring: [s.lease!] }),
});

const ROWS: Row[] = [
  {
    name: 'enqueue',
    target: { operation: 'PutItem', pk: 'TASK#' },
    setup: async () => ({}),
    act: (w) => w.store.enqueue({ type: TYPE, owner: 'o', payload: { n: 1 }, priority: PRIORITY }),
    state: (snap) =>
      snap.tasks.length === 0 ? 'unchanged' : classify(snap.tasks, isQueuedAtHead(theTask(snap), 0), false),
    answer: (v, _s, snap) =>
      expect(v).toMatchObject({
        created: true,
        task: { id: theTask(snap).id, status: 'QUEUED', attempts: 0 },
      }),
    known: () => ({}),
  },
  {
    name: 'enqueue (idempotency key)',
    target: { operation: 'PutItem', pk: 'TASK#' },
    setup: async () => ({}),
    act: (w) =>
      w.store.enqueue({
        type: TYPE,
        owner: 'o',
        payload: { n: 1 },
        priority: PRIORITY,
        idempotencyKey: 'key-1',
      }),
    state: (snap) =>
      snap.tasks.length === 0
        ? 'unchanged'
        : classify(
            snap.tasks,
            isQueuedAtHead(theTask(snap), 0) && theTask(snap).idempotencyKey === 'key-1',
            false,
          ),
    answer: (v, _s, snap) =>
      expect(v).toMatchObject({
        created: true,
        task: { id: theTask(snap).id, status: 'QUEUED', idempotencyKey: 'key-1' },
      }),
    known: () => ({}),
  },
  {
    name: 'requestCancel (QUEUED)',
    target: TASK_WRITE,
    setup: async (w) => ({ task: await enqueueTask(w) }),
    act: (w, s) => w.store.requestCancel({ id: s.task!.id }),
    state: (snap) => {
      const t = theTask(snap);
      return classify(
        t,
        t.status === 'CANCELLED' && t.readyPk === undefined && t.attempts === 0,
        isQueuedAtHead(t, 0),
      );
    },
    answer: (v) => expect(v).toMatchObject({ status: 'CANCELLED' }),
    known: () => ({}),
  },
  {
    name: 'requestCancel (RUNNING)',
    target: TASK_WRITE,
    setup: (w) => claimedTask(w),
    act: (w, s) => w.store.requestCancel({ id: s.task!.id }),
    state: (snap, s) => {
      const t = theTask(snap);
      return classify(t, isRunning(t, s.lease!, 'CANCEL_REQUESTED'), isRunning(t, s.lease!));
    },
    answer: (v) => expect(v).toMatchObject({ status: 'CANCEL_REQUESTED', leaseToken: 1, leaseOwner: WORKER }),
    known: (s) => ({ held: [s.lease!] }),
  },
  {
    name: 'redrive (FAILED → QUEUED)',
    target: TASK_WRITE,
    setup: async (w) => {
      const s = await claimedTask(w, { maxAttempts: 1 });
      await w.store.fail({ lease: s.lease!, error: 'boom', retryable: false });
      return s;
    },
    act: (w, s) => w.store.retry({ id: s.task!.id }),
    state: (snap) => {
      const t = theTask(snap);
      return classify(
        t,
        isQueuedAtHead(t, 0) && t.finishedAt === undefined,
        t.status === 'FAILED' && t.attempts === 1,
      );
    },
    answer: (v) => expect(v).toMatchObject({ status: 'QUEUED', attempts: 0 }),
    known: () => ({}),
  },
  claimRow('claim', TASK_WRITE),
  renewRow('renew', TASK_WRITE, 'task'),
  completeRow('complete'),
  endLeaseRow({
    name: 'fail (retry)',
    setup: (w) => claimedTask(w, { maxAttempts: 3 }),
    act: (w, s) => w.store.fail({ lease: s.lease!, error: 'boom' }),
    // Back in the queue after a backoff: in the delay index until promoted, one attempt spent.
    ends: (t) =>
      t.status === 'QUEUED' &&
      t.attempts === 1 &&
      t.leaseOwner === undefined &&
      t.readyPk === undefined &&
      t.sweepPk === undefined &&
      String(t.delayPk).startsWith('DELAY#') &&
      t.error === 'boom',
    answer: (v) => expect(v).toMatchObject({ status: 'QUEUED', attempts: 1, error: 'boom' }),
  }),
  endLeaseRow({
    name: 'fail (final)',
    setup: (w) => claimedTask(w, { maxAttempts: 1 }),
    act: (w, s) => w.store.fail({ lease: s.lease!, error: 'boom' }),
    ends: (t) =>
      t.status === 'FAILED' && t.attempts === 1 && t.leaseOwner === undefined && t.finishedAt !== undefined,
    answer: (v) => expect(v).toMatchObject({ status: 'FAILED', attempts: 1, error: 'boom' }),
  }),
  endLeaseRow({
    name: 'release',
    setup: (w) => claimedTask(w),
    act: (w, s) => w.store.release({ lease: s.lease! }),
    // The attempt is given back exactly once.
    ends: (t) => isQueuedAtHead(t, 0),
    answer: (v) => expect(v).toMatchObject({ status: 'QUEUED', attempts: 0 }),
  }),
  endLeaseRow({
    name: 'finishCancel',
    from: 'CANCEL_REQUESTED',
    setup: async (w) => {
      const s = await claimedTask(w);
      await w.store.requestCancel({ id: s.task!.id });
      return s;
    },
    act: (w, s) => w.store.finishCancel({ lease: s.lease! }),
    ends: (t) => t.status === 'CANCELLED' && t.leaseOwner === undefined && t.finishedAt !== undefined,
    answer: (v) => expect(v).toMatchObject({ status: 'CANCELLED' }),
  }),
  recoveryRow(
    'recovery fix (requeue)',
    3,
    (t) => isQueuedAtHead(t, 1) && String(t.error).startsWith('lease expired'),
  ),
  recoveryRow(
    'recovery fix (fail)',
    1,
    (t) =>
      t.status === 'FAILED' && t.attempts === 1 && t.leaseOwner === undefined && t.finishedAt !== undefined,
  ),
  {
    name: 'promote',
    target: TASK_WRITE,
    setup: async (w) => {
      const task = await enqueueTask(w, { delayMs: 1_000 });
      w.clock.advance(1_000);
      return { task };
    },
    act: async (w, s) => {
      if (!(await w.store.promote({ id: s.task!.id })))
        throw new Refused('promote answered false (not waiting)');
      return true;
    },
    state: (snap) => {
      const t = theTask(snap);
      return classify(
        t,
        isQueuedAtHead(t, 0) && t.dueReadyPk === undefined,
        t.status === 'QUEUED' && t.readyPk === undefined && String(t.delayPk).startsWith('DELAY#'),
      );
    },
    answer: (v) => expect(v).toBe(true),
    known: () => ({}),
  },
  claimRow('slot take (global limit)', { operation: 'UpdateItem', pk: 'LIMIT#global' }),
  claimRow('slot take (type limit)', { operation: 'UpdateItem', pk: 'LIMIT#type#' }),
  renewRow('slot renew', { operation: 'UpdateItem', pk: 'LIMIT#global' }, 'global-slot'),
  completeRow(
    'slot release (after complete)',
    { operation: 'UpdateItem', pk: 'LIMIT#global' },
    'global-slot',
  ),
  {
    name: 'lock acquire',
    target: { operation: 'UpdateItem', pk: 'LOCK#' },
    setup: async () => ({}),
    act: (w) => w.locks.acquire(LOCK_KEY, { leaseMs: 1_000, mode: 'fixed' }),
    state: (snap) => {
      const l = theLock(snap);
      return classify(l, l?.holder !== undefined && l.lockToken === 1, l?.holder === undefined);
    },
    answer: (v, _s, snap) => {
      expect(v).toMatchObject({ token: 1, holder: theLock(snap)?.holder });
      expect((v as Lock).signal.aborted).toBe(false);
    },
    known: (_s, value) => ({ locks: value ? [value as Lock] : [] }),
  },
  {
    name: 'lock renew',
    target: { operation: 'UpdateItem', pk: 'LOCK#' },
    setup: async (w) => {
      const lock = await w.locks.acquire(LOCK_KEY, { leaseMs: 300, mode: 'auto-renew' });
      const before = lock.leaseUntil;
      // The first renewal fires 100 ms (of real time) after the acquisition.
      w.clock.advance(100);
      return { lock, before };
    },
    act: async (w, s) => {
      const lock = s.lock!;
      const renewedUntil = w.clock.now() + 300;
      for (const until = Date.now() + 2_000; Date.now() < until;) {
        if (lock.signal.aborted) throw lock.signal.reason;
        if (lock.leaseUntil === renewedUntil) return lock;
        await new Promise((r) => setTimeout(r, 10));
      }
      // Every answer lost: the client keeps its old expiry (and keeps trying) until its lease runs out.
      throw new NothingDone('no renewal confirmed within 2 s');
    },
    state: (snap, s) => {
      const l = theLock(snap);
      if (l?.holder !== s.lock!.holder || l.lockToken !== 1)
        throw new Error(`the lock changed hands: ${show(l)}`);
      return classify(l, l.leaseUntil === snap.now + 300, l.leaseUntil === s.before);
    },
    answer: (v) => expect((v as Lock).signal.aborted).toBe(false),
    // Held while its signal has not aborted.
    known: (s) => ({ locks: s.lock!.signal.aborted ? [] : [s.lock!] }),
  },
  {
    name: 'lock release',
    target: { operation: 'UpdateItem', pk: 'LOCK#' },
    setup: async (w) => ({ lock: await w.locks.acquire(LOCK_KEY, { leaseMs: 1_000, mode: 'fixed' }) }),
    act: async (_w, s) => {
      if (!(await s.lock!.release())) throw new Refused('release answered false (no longer ours)');
      return true;
    },
    state: (snap, s) => {
      const l = theLock(snap);
      return classify(
        l,
        l !== undefined && l.holder === undefined && l.lockToken === 1,
        l?.holder === s.lock!.holder,
      );
    },
    answer: (v) => expect(v).toBe(true),
    known: (s, value, state) => ({ locks: value || state === 'applied' ? [] : [s.lock!] }),
  },
  {
    name: 'fleet seat take',
    target: SEAT_WRITE,
    setup: async () => ({}),
    act: async (w) => {
      const seat = await w.seats.take('invocation-a', w.clock.now() + 60_000);
      if (!seat) throw new NothingDone('no seat taken');
      return seat;
    },
    state: (snap) => {
      const held = heldSeats(snap);
      return classify(
        held,
        held.length === 1 && held[0]!.holder === 'invocation-a' && held[0]!.token === 1,
        held.length === 0,
      );
    },
    answer: (v, _s, snap) =>
      expect(v).toMatchObject({ holder: 'invocation-a', token: 1, ...seatIndexOf(snap) }),
    known: (_s, value) => ({ seats: value ? [value as SeatLease] : [] }),
  },
  {
    name: 'fleet seat give back',
    target: SEAT_WRITE,
    setup: async (w) => ({ seat: await w.seats.take('invocation-a', w.clock.now() + 60_000) }),
    act: async (w, s) => {
      const given = await w.seats.giveBack(s.seat!);
      if (!given.released) throw new Refused('give back answered not released (no longer ours)');
      return given;
    },
    state: (snap) => classify(snap.seats, heldSeats(snap).length === 0, heldSeats(snap).length === 1),
    answer: (v) => expect(v).toEqual({ released: true, rings: 0 }),
    known: (s, value, state) => ({ seats: value || state === 'applied' ? [] : [s.seat!] }),
  },
];

// ---------------------------------------------------------------------------------------------------
// The faults (columns).

interface Column {
  name: string;
  /** One fault, which the SDK or the store must ride out: the operation must succeed. */
  single: boolean;
  arm(faults: FaultInjector, target: Row['target']): FaultHandle | undefined;
}

const SINGLE_FAULTS: FaultKind[] = [
  'lost-network',
  'lost-deadline',
  'deadline-before',
  'throttled',
  'throughput-exceeded',
  'server-error-before',
  'server-error-after',
];

const COLUMNS: Column[] = [
  { name: 'no fault', single: true, arm: () => undefined },
  ...SINGLE_FAULTS.map((fault): Column => ({
    name: fault,
    single: true,
    arm: (faults, target) => faults.inject({ ...target, fault }),
  })),
  {
    name: 'throttled-throughout',
    single: false,
    arm: (faults, target) => faults.inject({ ...target, fault: 'throttled', times: Infinity }),
  },
  {
    name: 'outcome-unknown',
    single: false,
    arm: (faults, target) => {
      // Every send of the write loses its answer (so no refusal can return the item, as DynamoDB's
      // ReturnValuesOnConditionCheckFailure would), and every read after the first fails.
      const write = faults.inject({ ...target, fault: 'lost-deadline', times: Infinity });
      faults.inject({ operation: 'GetItem', fault: 'deadline-before', times: Infinity, after: write });
      return write;
    },
  },
];

// ---------------------------------------------------------------------------------------------------
// Nothing stranded, nothing doubled: every leased task, held slot and held lock is known to its holder.

function checkNothingStranded(snap: Snapshot, known: Known, config: LeaseholdConfig): string[] {
  const problems: string[] = [];
  const held = known.held ?? [];
  const all = [...held, ...(known.expiring ?? [])];
  for (const t of snap.tasks) {
    if (t.attempts < 0 || t.attempts > t.maxAttempts)
      problems.push(`task ${t.id} has ${t.attempts} of ${t.maxAttempts} attempts`);
    if (t.status !== 'RUNNING' && t.status !== 'CANCEL_REQUESTED') continue;
    if (!all.some((l) => l.taskId === t.id && l.owner === t.leaseOwner && l.token === t.leaseToken)) {
      problems.push(
        `task ${t.id} is ${t.status} under ${t.leaseOwner}/${t.leaseToken}, a lease nobody knows of`,
      );
    }
  }
  const live = snap.slots.filter((s) => !leaseIsFree(s, snap.now, config));
  for (const slot of live) {
    const scope = slot.pk.slice('LIMIT#'.length);
    const index = Number(slot.sk.slice('SLOT#'.length));
    const mine = (l: Lease) =>
      l.owner === slot.holder &&
      l.slots.some((x) => x.scope === scope && x.index === index && x.token === slot.slotToken);
    const owner = held.find(mine);
    const ending = (known.expiring ?? []).find(mine);
    if (owner) {
      const task = snap.tasks.find((t) => t.id === owner.taskId);
      if (
        !task ||
        task.leaseToken !== owner.token ||
        (task.status !== 'RUNNING' && task.status !== 'CANCEL_REQUESTED')
      )
        problems.push(
          `slot ${slot.pk}/${slot.sk} is held for task ${owner.taskId}, which is not leased: ${show(task)}`,
        );
      else if ((task.leaseUntil ?? 0) > (slot.leaseUntil ?? 0))
        problems.push(
          `task ${task.id}'s lease (${task.leaseUntil}) outlives its slot ${slot.pk} (${slot.leaseUntil})`,
        );
    } else if (ending) {
      if ((slot.leaseUntil ?? 0) > ending.leaseUntil)
        problems.push(
          `slot ${slot.pk}/${slot.sk} of an ended lease is held past that lease (${slot.leaseUntil} > ${ending.leaseUntil})`,
        );
    } else {
      problems.push(
        `slot ${slot.pk}/${slot.sk} is held by ${slot.holder} (token ${slot.slotToken}, task ${slot.taskId}) until ${slot.leaseUntil}, and no lease its holder knows of has it`,
      );
    }
  }
  for (const lease of held) {
    for (const s of lease.slots) {
      const slot = live.find(
        (x) => x.pk === `LIMIT#${s.scope}` && x.sk === `SLOT#${String(s.index).padStart(5, '0')}`,
      );
      if (slot?.holder !== lease.owner || slot.slotToken !== s.token)
        problems.push(
          `lease ${lease.taskId}/${lease.token} holds slot ${s.scope}#${s.index} (token ${s.token}), but the table says ${show(slot)}`,
        );
    }
  }
  for (const l of snap.locks.filter((x) => !leaseIsFree(x, snap.now, config))) {
    const lock = (known.locks ?? []).find((k) => k.holder === l.holder && k.token === l.lockToken);
    if (!lock)
      problems.push(
        `lock ${l.pk} is held by ${l.holder} (token ${l.lockToken}) until ${l.leaseUntil}, and no lock its holder knows of has it`,
      );
  }
  for (const seat of heldSeats(snap)) {
    const index = Number(seat.sk.slice('SEAT#'.length));
    if (
      !(known.seats ?? []).some(
        (k) => k.index === index && k.holder === seat.holder && k.token === seat.token,
      )
    )
      problems.push(
        `fleet seat ${index} is held by ${seat.holder} (token ${seat.token}) until ${seat.until}, and no invocation knows it holds it`,
      );
  }
  for (const k of known.seats ?? []) {
    const seat = snap.seats.find((x) => Number(x.sk.slice('SEAT#'.length)) === k.index);
    if (seat?.holder !== k.holder || seat.token !== k.token)
      problems.push(
        `fleet seat ${k.index} is held by its invocation (token ${k.token}), but the table says ${show(seat)}`,
      );
  }
  for (const lock of known.locks ?? []) {
    const l = snap.locks.find((x) => x.pk === `LOCK#${lock.key}`);
    if (l?.holder !== lock.holder || l.lockToken !== lock.token)
      problems.push(
        `lock ${lock.key} is held by its caller (token ${lock.token}), but the table says ${show(l)}`,
      );
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------

// Each case has its own table and waits mostly on backoff timers: many run at once.
vi.setConfig({ maxConcurrency: 16 });

describe.concurrent.each(ROWS)('$name', (row) => {
  it.for(COLUMNS)('× $name', async (column, { expect }) => {
    const w = await newWorld();
    const locks: Lock[] = [];
    try {
      const s = await row.setup(w);
      if (s.lock) locks.push(s.lock);
      const fault = column.arm(w.faults, row.target);
      let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
      try {
        outcome = { ok: true, value: await row.act(w, s) };
      } catch (error) {
        outcome = { ok: false, error };
      }
      if (outcome.ok && (outcome.value as Lock | undefined)?.release) locks.push(outcome.value as Lock);
      if (fault)
        expect(
          fault.fired,
          `the ${column.name} fault never fired: no ${show(row.target)} request was sent`,
        ).toBeGreaterThan(0);

      // Read the table (through a client without faults) before the faults are cleared: an auto-renewing
      // lock keeps trying in the background, and a renewal sent after the clear would land before a slow
      // snapshot and show a write the caller was (rightly) never told of.
      const snap = await snapshot(w);
      w.faults.clear();
      const state = row.state(snap, s);
      const told = outcome.ok
        ? 'success'
        : `${(outcome.error as Error)?.name}: ${(outcome.error as Error)?.message}`;
      const context = `the caller was told ${told}; the table says the ${row.name} ${state === 'applied' ? 'applied' : 'did not apply'}`;
      if (!outcome.ok) {
        expect(isRefusal(outcome.error), `a refusal, yet nothing refused the write (${context})`).toBe(false);
        expect(
          column.single,
          `an error from a single ${column.name} fault, which the store should have ridden out (${context})`,
        ).toBe(false);
        expect(isTyped(outcome.error), `an untyped error (${context})`).toBe(true);
        // Throttled throughout, the write never reached DynamoDB.
        if (column.name === 'throttled-throughout') expect(state, context).toBe('unchanged');
      } else {
        if (state === 'applied') row.answer(outcome.value, s, snap);
        else expect(row.mayStayUnapplied && !column.single, `success, but ${context}`).toBe(true);
      }
      const known = row.known(s, outcome.ok ? outcome.value : undefined, state);
      expect(checkNothingStranded(snap, known, w.config), `stranded or doubled (${context})`).toEqual([]);
    } finally {
      w.faults.clear();
      await Promise.all(locks.map((l) => l.release().catch(() => false)));
      w.client.destroy();
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// The claim's late-landing check: an answer that arrives when the lease is nearly over (the manual clock
// moves while it is on its way) must not start the task; the claim gives the task and its slots back.

describe.concurrent('claim whose answer lands late', () => {
  it.for(SINGLE_FAULTS)(
    '× %s: the task and its slots are given back, the attempt not spent',
    async (fault, { expect }) => {
      const w = await newWorld();
      try {
        const task = await enqueueTask(w);
        const hit = w.faults.inject({
          ...TASK_WRITE,
          fault,
          onFire: () => w.clock.advance(w.config.leaseTimeoutMs - w.config.clockSkewMs),
        });
        const round = await w.store.claim({ workerId: WORKER, types: [TYPE], max: 1 });
        w.faults.clear();
        expect(hit.fired).toBe(1);
        expect(round.claimed).toEqual([]);
        const snap = await snapshot(w);
        const t = theTask(snap);
        expect(t.id).toBe(task.id);
        // Claimed once (token 1), given back once: QUEUED at its head with no attempt spent.
        expect(isQueuedAtHead(t, 0) && t.leaseToken === 1, show(t)).toBe(true);
        expect(checkNothingStranded(snap, {}, w.config)).toEqual([]);
        expect(
          snap.slots.every((x) => x.holder === undefined),
          show(snap.slots),
        ).toBe(true);
      } finally {
        w.client.destroy();
      }
    },
  );
});

// ---------------------------------------------------------------------------------------------------
// The injector itself: its faults look to the SDK and the store like the real thing.

describe('fault injector', () => {
  const client = (maxAttempts: number) =>
    new DynamoDBClient({
      endpoint: server.endpoint,
      region: 'us-east-1',
      credentials,
      retryStrategy: fastRetryStrategy(maxAttempts),
    });
  const item = (id: string) => ({ pk: `TASK#${id}`, sk: 'TASK' });

  it('answers throttling as the SDK’s ThrottlingException, after the SDK’s own retries, without writing', async () => {
    const w = await newWorld();
    const c = client(2);
    const fault = injectFault(c, { operation: 'PutItem', fault: 'throttled', times: Infinity });
    const error = await documentClientFor(c)
      .send(new PutCommand({ TableName: w.config.tableName, Item: item('a') }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThrottlingException);
    expect(error).toMatchObject({ $metadata: { httpStatusCode: 400, attempts: 2 } });
    expect(isTransient(error)).toBe(true);
    expect(fault.fired).toBe(2);
    expect(
      (
        await reader.send(
          new GetCommand({ TableName: w.config.tableName, Key: item('a'), ConsistentRead: true }),
        )
      ).Item,
    ).toBeUndefined();
  });

  it('a 500 after applying: InternalServerError, and the write is there', async () => {
    const w = await newWorld();
    const c = client(1);
    injectFault(c, { operation: 'PutItem', fault: 'server-error-after' });
    const error = await documentClientFor(c)
      .send(new PutCommand({ TableName: w.config.tableName, Item: item('b') }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error).toMatchObject({ $fault: 'server', $metadata: { httpStatusCode: 500 } });
    expect(
      (
        await reader.send(
          new GetCommand({ TableName: w.config.tableName, Key: item('b'), ConsistentRead: true }),
        )
      ).Item,
    ).toMatchObject(item('b'));
  });

  it('faults only the nth matching request, and a chained rule only once its trigger fired', async () => {
    const w = await newWorld();
    const c = client(1);
    const faults = new FaultInjector(c);
    const doc = documentClientFor(c);
    const second = faults.inject({ operation: 'PutItem', pk: 'TASK#', nth: 2, fault: 'deadline-before' });
    const reads = faults.inject({
      operation: 'GetItem',
      fault: 'server-error-before',
      times: Infinity,
      after: second,
    });
    const put = (id: string) =>
      doc.send(new PutCommand({ TableName: w.config.tableName, Item: item(id) })).then(
        () => 'ok',
        (e: Error) => e.name,
      );
    const get = (id: string) =>
      doc.send(new GetCommand({ TableName: w.config.tableName, Key: item(id) })).then(
        () => 'ok',
        (e: Error) => e.name,
      );
    expect([
      await get('c'),
      await put('c'),
      await put('d'),
      await put('e'),
      await get('c'),
      await get('c'),
    ]).toEqual(['ok', 'ok', 'AbortError', 'ok', 'InternalServerError', 'InternalServerError']);
    expect([second.fired, reads.fired]).toEqual([1, 2]);
  });
});
