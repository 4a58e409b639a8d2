/**
 * The task state machine's edges (shared/store/transitions.ts), checked as pure data with a fixed
 * clock: on arbitrary task states and on random walks from enqueue, every edge a state allows
 * - is accepted by its own condition on that state (a small evaluator of the condition expression);
 * - leaves the item satisfying the index invariant written at the top of transitions.ts;
 * - costs the write units it always cost (shared/store/write-units.ts, index writes included);
 * and of the edges that take a task out of its lease, the first to apply refuses all the others.
 */
import { storeError, storeResult } from '../shared/store/body-layout.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { writeCost, transitionCost, type WriteCost } from '../shared/store/write-units.js';
import { defineConfig } from '../shared/config.js';
import {
  decideFailure,
  decideRecovery,
  leaseExpiry,
  retentionExpiry,
  sweepKeyAfterRenewal,
  sweepSlackMs,
} from '../shared/lease-rules.js';
import type { Candidate } from '../shared/store/claim-state.js';
import type { Lease, ProgressReport } from '../shared/task-inputs.js';
import {
  applyTransition,
  cancelledQueued,
  cancelledRunning,
  cancelRequested,
  claimed,
  claimedWhenDue,
  claimUndone,
  completed,
  conditionOf,
  DUE_READY,
  dueClaimUndone,
  enqueued,
  failedFinal,
  failedRetry,
  promoted,
  recoveredCancel,
  recoveredFail,
  recoveredRequeue,
  released,
  renewed,
  retried,
  type Transition,
} from '../shared/store/transitions.js';
import type { TaskItem } from '../shared/store/task-item.js';
import {
  DEFAULT_PRIORITY,
  delaySweepPartition,
  INDEX,
  leaseSweepPartition,
  ownerSortKey,
  taskOwnerPartitionOf,
  PRIORITY_LIMIT,
  readyPartition,
  readySortKey,
  shardForId,
  taskKey,
} from '../shared/table-layout.js';
import { TaskStatus } from '../shared/task-model.js';

type Item = Record<string, unknown>;

const config = defineConfig(); // lease 60 s, heartbeat 10 s, skew 5 s, retention 30 days
const SLACK = sweepSlackMs(config);
const T0 = 1_800_000_000_000;
const MINUTE = 60_000;
const DAY = 86_400_000;

const EDGES = [
  'enqueued',
  'claimed',
  'claimUndone',
  'renewed',
  'completed',
  'failedRetry',
  'failedFinal',
  'released',
  'cancelRequested',
  'cancelledQueued',
  'cancelledRunning',
  'recoveredRequeue',
  'recoveredFail',
  'recoveredCancel',
  'promoted',
  'claimedWhenDue',
  'dueClaimUndone',
  'retried',
] as const;
type EdgeName = (typeof EDGES)[number];

/** Index writes an edge costs (0 where not listed): 1 per entry added or removed, 2 per entry whose key moves. */
type IndexWrites = Partial<Record<'ready' | 'sweep' | 'delays' | 'owner', number>>;

interface Edge {
  name: EdgeName;
  t: Transition;
  indexWrites: IndexWrites;
  /** It takes the task out of its lease: once one applies, every other such edge from the same read is refused. */
  leavesLease?: boolean;
  candidate?: Candidate;
}

/** What the caller of an edge decides or passes through: who claims, the jitter, the outcome of an attempt. */
interface Inputs {
  workerId: string;
  random: number;
  retryable: boolean;
  backoffBaseMs: number;
  error: string;
  progress: ProgressReport | undefined;
}

// ---------------------------------------------------------------------------------------------
// The invariant, as checks on one item.

const isSet = (v: unknown) => v !== undefined;

function readyKeysOf(item: Item): { pk: string; sk: string } {
  const [type, shard, priority] = [item.type as string, item.shard as number, item.priority as number];
  return {
    pk: readyPartition(type, shard, priority),
    sk: readySortKey(priority, item.availableAt as number, item.createdAt as number, item.id as string),
  };
}

/**
 * The index invariant of transitions.ts. `queuedAt` is the `now` of the write that produced the item,
 * when that write queued it: a task queued when due is in the ready index, otherwise in the delay index.
 */
function violations(item: Item, queuedAt?: number): string[] {
  const out: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) out.push(what);
  };
  const status = item.status as TaskStatus;
  const shard = item.shard as number;
  const inReady = isSet(item[INDEX.ready.partition]) || isSet(item[INDEX.ready.sort]);
  const inDelay = isSet(item[INDEX.delay.partition]) || isSet(item[INDEX.delay.sort]);
  const inLease = isSet(item[INDEX.lease.partition]) || isSet(item[INDEX.lease.sort]);
  const carriesDueKeys = isSet(item[DUE_READY.partition]) || isSet(item[DUE_READY.sort]);
  const hasLease = isSet(item.leaseOwner) || isSet(item.leaseUntil);
  check(shard === shardForId(item.id as string), 'shard is fixed by the id');
  check(
    item[INDEX.owner.partition] === taskOwnerPartitionOf(item.owner as string, item.id as string) &&
      item[INDEX.owner.sort] === ownerSortKey(item.createdAt as number, item.id as string),
    'in the owner index under its owner',
  );
  check(
    (item.attempts as number) >= 0 && (item.attempts as number) <= (item.maxAttempts as number),
    '0 <= attempts <= maxAttempts',
  );
  const ready = readyKeysOf(item);
  switch (status) {
    case TaskStatus.QUEUED: {
      check(!hasLease && !inLease, 'QUEUED: no lease fields, not in the lease index');
      check(inReady !== inDelay, 'QUEUED: in exactly one of ready index and delay index');
      check((item.attempts as number) < (item.maxAttempts as number), 'QUEUED: an attempt left');
      if (inReady) {
        check(
          item[INDEX.ready.partition] === ready.pk && item[INDEX.ready.sort] === ready.sk,
          'ready: keys of its type, shard or lane, priority, due time, age',
        );
        check(!carriesDueKeys, 'ready: no due-ready keys');
      } else {
        check(
          item[INDEX.delay.partition] === delaySweepPartition(shard) &&
            item[INDEX.delay.sort] === item.availableAt,
          'delayed: DELAY#<shard> at its due time',
        );
        check(
          item[DUE_READY.partition] === ready.pk && item[DUE_READY.sort] === ready.sk,
          'delayed: carries the ready keys it is promoted to',
        );
      }
      if (queuedAt !== undefined)
        check(
          inReady === (item.availableAt as number) <= queuedAt,
          'queued by this write: in the ready index iff due',
        );
      break;
    }
    case TaskStatus.RUNNING:
    case TaskStatus.CANCEL_REQUESTED: {
      const [leaseUntil, sweepAt] = [item.leaseUntil as number, item[INDEX.lease.sort] as number];
      check(!inReady && !inDelay && !carriesDueKeys, 'leased: in neither the ready nor the delay index');
      check(isSet(item.leaseOwner) && typeof leaseUntil === 'number', 'leased: holder and expiry');
      check(item[INDEX.lease.partition] === leaseSweepPartition(shard), 'leased: in LEASE#<shard>');
      check(
        sweepAt >= leaseUntil && sweepAt <= leaseUntil + SLACK,
        'leased: leaseUntil <= sweepAt <= leaseUntil + slack',
      );
      check(
        (item.leaseToken as number) >= 1 && (item.attempts as number) >= 1,
        'leased: claimed at least once',
      );
      break;
    }
    default: {
      check(!inReady && !inDelay && !inLease && !carriesDueKeys, 'terminal: in no index');
      check(!hasLease, 'terminal: no lease fields');
      check(
        typeof item.finishedAt === 'number' &&
          item.expiresAt === retentionExpiry(item.finishedAt as number, config),
        'terminal: finishedAt and its TTL',
      );
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// A small evaluator of the condition expressions the edges render (comparisons, IN, AND, OR,
// attribute_exists / attribute_not_exists), with DynamoDB's rule that a missing attribute compares false.

function holds(t: Transition, item: Item | undefined): boolean {
  const p = conditionOf(t).params();
  const names = p.ExpressionAttributeNames ?? {};
  const values = p.ExpressionAttributeValues ?? {};
  const tokens = p.ConditionExpression!.match(/<=|>=|<>|[(),=<>]|[#:]?\w+/g)!;
  let i = 0;
  const next = () => tokens[i++]!;
  const take = (expected: string) => {
    const got = next();
    if (got !== expected) throw new Error(`expected ${expected}, got ${got} in ${p.ConditionExpression}`);
  };
  const operand = (token: string): unknown => {
    if (token.startsWith('#')) return item?.[names[token]!];
    if (token.startsWith(':')) return values[token];
    throw new Error(`not an operand: ${token} in ${p.ConditionExpression}`);
  };
  const compare = (a: unknown, op: string, b: unknown): boolean => {
    if (a === undefined || b === undefined || typeof a !== typeof b) return false;
    const [x, y] = [a as number | string, b as number | string];
    if (op === '=') return x === y;
    if (op === '<>') return x !== y;
    if (op === '<') return x < y;
    if (op === '<=') return x <= y;
    if (op === '>') return x > y;
    if (op === '>=') return x >= y;
    throw new Error(`unknown comparison ${op}`);
  };
  const atom = (): boolean => {
    const token = next();
    if (token === '(') {
      const v = or();
      take(')');
      return v;
    }
    if (token === 'attribute_exists' || token === 'attribute_not_exists') {
      take('(');
      const v = operand(next());
      take(')');
      return (v !== undefined) === (token === 'attribute_exists');
    }
    const left = operand(token);
    const op = next();
    if (op === 'IN') {
      take('(');
      const options = [operand(next())];
      while (tokens[i] === ',') {
        next();
        options.push(operand(next()));
      }
      take(')');
      return left !== undefined && options.includes(left);
    }
    return compare(left, op, operand(next()));
  };
  const and = (): boolean => {
    let v = atom();
    while (tokens[i] === 'AND') {
      next();
      v = atom() && v;
    }
    return v;
  };
  const or = (): boolean => {
    let v = and();
    while (tokens[i] === 'OR') {
      next();
      v = and() || v;
    }
    return v;
  };
  const result = or();
  if (i !== tokens.length) throw new Error(`unparsed: ${tokens.slice(i).join(' ')}`);
  return result;
}

// ---------------------------------------------------------------------------------------------
// The edges a state allows, as the store takes them (the decisions from lease-rules.ts).

function leaseOf(item: Item): Lease {
  return {
    taskId: item.id as string,
    type: item.type as string,
    owner: item.leaseOwner as string,
    token: item.leaseToken as number,
    leaseUntil: item.leaseUntil as number,
    sweepAt: item[INDEX.lease.sort] as number,
    shard: item.shard as number,
    priority: item.priority as number,
    createdAt: item.createdAt as number,
    availableAt: item.availableAt as number,
    attempts: item.attempts as number,
    maxAttempts: item.maxAttempts as number,
    slots: [],
  };
}

/** A worker's claim of a due delayed task from its delay partition, serving `types`. */
const dueClaimOf = (item: Item, types: string[], workerId: string, now: number) =>
  claimedWhenDue(
    { shard: item.shard as number, delayPartition: item[INDEX.delay.partition] as string },
    types,
    workerId,
    now,
    leaseExpiry(now, config),
    config,
  );

function edgesFrom(item: Item, now: number, x: Inputs): Edge[] {
  const task = item as unknown as TaskItem;
  const edges: Edge[] = [];
  const delayed = isSet(item[INDEX.delay.partition]);
  switch (task.status) {
    case TaskStatus.QUEUED:
      if (delayed) {
        if ((item[INDEX.delay.sort] as number) <= now) {
          edges.push({
            name: 'promoted',
            t: promoted(item[INDEX.delay.partition] as string, now),
            indexWrites: { ready: 1, delays: 1 },
          });
          // Claimed straight from the delay partition by a worker serving its type (default priority only).
          if (task.priority === DEFAULT_PRIORITY)
            edges.push({
              name: 'claimedWhenDue',
              t: dueClaimOf(item, [task.type], x.workerId, now),
              indexWrites: { delays: 1, sweep: 1 },
            });
        }
        edges.push({ name: 'cancelledQueued', t: cancelledQueued(now, config), indexWrites: { delays: 1 } });
      } else {
        const candidate: Candidate = {
          id: task.id,
          type: task.type,
          shard: task.shard,
          readySk: task.readySk!,
        };
        edges.push({
          name: 'claimed',
          t: claimed(candidate, x.workerId, now, leaseExpiry(now, config), config),
          indexWrites: { ready: 1, sweep: 1 },
          candidate,
        });
        edges.push({ name: 'cancelledQueued', t: cancelledQueued(now, config), indexWrites: { ready: 1 } });
      }
      break;
    case TaskStatus.RUNNING:
    case TaskStatus.CANCEL_REQUESTED: {
      const lease = leaseOf(item);
      const leaseUntil = leaseExpiry(now, config);
      const sweepAt = sweepKeyAfterRenewal(lease.sweepAt, leaseUntil, config);
      edges.push({
        name: 'renewed',
        t: renewed(lease, leaseUntil, sweepAt, x.progress),
        indexWrites: sweepAt === undefined ? {} : { sweep: 2 },
      });
      edges.push({
        name: 'completed',
        t: completed(lease, now, storeResult(JSON.stringify({ ok: true }), lease.token).fields, config),
        indexWrites: { sweep: 1 },
        leavesLease: true,
      });
      if (task.status === TaskStatus.RUNNING) {
        const outcome = decideFailure(
          lease,
          now,
          x.retryable,
          { baseMs: x.backoffBaseMs, maxMs: config.backoffMaxMs },
          () => x.random,
        );
        if (outcome.status === TaskStatus.QUEUED) {
          edges.push({
            name: 'failedRetry',
            t: failedRetry(
              lease,
              now,
              outcome.availableAt,
              storeError(x.error, lease.token).fields,
              x.progress,
            ),
            indexWrites: outcome.availableAt <= now ? { ready: 1, sweep: 1 } : { sweep: 1, delays: 1 },
            leavesLease: true,
          });
        } else {
          edges.push({
            name: 'failedFinal',
            t: failedFinal(lease, now, storeError(x.error, lease.token).fields, config, x.progress),
            indexWrites: { sweep: 1 },
            leavesLease: true,
          });
        }
        edges.push({
          name: 'released',
          t: released(lease, now, x.progress),
          indexWrites: lease.availableAt <= now ? { ready: 1, sweep: 1 } : { sweep: 1, delays: 1 },
          leavesLease: true,
        });
        edges.push({ name: 'cancelRequested', t: cancelRequested(now), indexWrites: {} });
      } else {
        edges.push({
          name: 'cancelledRunning',
          t: cancelledRunning(lease, now, config),
          indexWrites: { sweep: 1 },
          leavesLease: true,
        });
      }
      const decision = decideRecovery(task, now, config);
      if (decision.action === 'requeue')
        edges.push({
          name: 'recoveredRequeue',
          t: recoveredRequeue(task, now),
          indexWrites: { ready: 1, sweep: 1 },
          leavesLease: true,
        });
      if (decision.action === 'fail')
        edges.push({
          name: 'recoveredFail',
          t: recoveredFail(task, now, decision.error, config),
          indexWrites: { sweep: 1 },
          leavesLease: true,
        });
      if (decision.action === 'cancel')
        edges.push({
          name: 'recoveredCancel',
          t: recoveredCancel(task, now, config),
          indexWrites: { sweep: 1 },
          leavesLease: true,
        });
      break;
    }
    case TaskStatus.FAILED:
    case TaskStatus.CANCELLED:
      edges.push({ name: 'retried', t: retried(task, now), indexWrites: { ready: 1 } });
      break;
    default:
      break;
  }
  return edges;
}

/** The write the store sends: the edge applied, and the fresh write id conditionalUpdate stamps (one length, as real ids). */
let writes = 0;
const stamp = () => `w-${String(++writes).padStart(34, '0')}`;
const write = (item: Item, t: Transition): Item => ({ ...applyTransition(item, t), writeId: stamp() });

const expectedCost = (indexWrites: IndexWrites): WriteCost => {
  const indexes = {
    ready: indexWrites.ready ?? 0,
    sweep: indexWrites.sweep ?? 0,
    delays: indexWrites.delays ?? 0,
    owner: indexWrites.owner ?? 0,
  };
  return { table: 1, indexes, total: 1 + indexes.ready + indexes.sweep + indexes.delays + indexes.owner };
};

/** Every check one edge taken from `before` at `now` must pass; returns the item after it. */
function takeEdge(before: Item, edge: Edge, now: number): Item {
  expect(holds(edge.t, before), `${edge.name}: its condition accepts the state it was chosen for`).toBe(true);
  const after = write(before, edge.t);
  expect(
    violations(after, after.status === TaskStatus.QUEUED ? now : undefined),
    `${edge.name} from ${String(before.status)}`,
  ).toEqual([]);
  // Items here are under 1 KB: one table write unit, plus the index writes the membership change costs.
  expect(transitionCost(before, edge.t), `${edge.name}: write units`).toEqual(expectedCost(edge.indexWrites));
  expect(writeCost(before, after)).toEqual(transitionCost(before, edge.t));
  // Fencing tokens only grow, and only a claim moves them; the owner index is never written after enqueue.
  const claims = edge.name === 'claimed' || edge.name === 'claimedWhenDue';
  expect(after.leaseToken).toBe((before.leaseToken as number) + (claims ? 1 : 0));
  expect([after.ownerPk, after.ownerSk]).toEqual([before.ownerPk, before.ownerSk]);
  return after;
}

// ---------------------------------------------------------------------------------------------
// Arbitrary task states: every status, priority (shards and lanes), shard, attempt count, time and lease.

const arbTask = fc.record({
  id: fc.stringMatching(/^[A-Za-z0-9_-]{1,32}$/),
  type: fc.constantFrom('email.send', 'report.build', 'x'),
  priority: fc.oneof(
    fc.constant(DEFAULT_PRIORITY),
    fc.integer({ min: -PRIORITY_LIMIT, max: PRIORITY_LIMIT }),
  ),
  owner: fc.constantFrom('alice@example.com', 'arn:aws:iam::123456789012:role/caller'),
  // Often one or two, so walks reach the last attempt.
  maxAttempts: fc.oneof(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 1, max: 10 })),
  // Some tasks a moment old (live leases), some days old (expired ones).
  createdAt: fc.oneof(
    fc.integer({ min: T0 - 3 * MINUTE, max: T0 }),
    fc.integer({ min: T0 - 10 * DAY, max: T0 }),
  ),
  token: fc.integer({ min: 0, max: 1_000_000 }),
  payload: fc.json({ maxDepth: 1 }).filter((j) => j.length <= 64),
});
type ArbTask = typeof arbTask extends fc.Arbitrary<infer T> ? T : never;

const arbInputs: fc.Arbitrary<Inputs> = fc.record({
  workerId: fc.constantFrom('w-1', 'worker-b:42'),
  random: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  retryable: fc.boolean(),
  backoffBaseMs: fc.constantFrom(0, 1_000, 60_000),
  error: fc.string({ maxLength: 32 }),
  progress: fc.option(
    fc.record({
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
      note: fc.option(fc.string({ maxLength: 32 }), { nil: undefined }),
    }),
    { nil: undefined },
  ),
});

const KINDS = [
  'ready',
  'delayed',
  TaskStatus.RUNNING,
  TaskStatus.CANCEL_REQUESTED,
  TaskStatus.SUCCESS,
  TaskStatus.FAILED,
  TaskStatus.CANCELLED,
] as const;

/** The fields every task has, as enqueue writes them (status and placement come from the state). */
function baseItem(task: ArbTask, rest: { attempts: number; availableAt: number; updatedAt: number }): Item {
  return {
    ...taskKey(task.id),
    id: task.id,
    type: task.type,
    priority: task.priority,
    payload: task.payload,
    owner: task.owner,
    shard: shardForId(task.id),
    maxAttempts: task.maxAttempts,
    createdAt: task.createdAt,
    leaseToken: task.token,
    writeId: stamp(),
    ownerPk: taskOwnerPartitionOf(task.owner, task.id),
    ownerSk: ownerSortKey(task.createdAt, task.id),
    ...rest,
  };
}

const sortedTimes = (from: number, count: number) =>
  fc
    .array(fc.integer({ min: from, max: T0 }), { minLength: count, maxLength: count })
    .map((ts) => ts.sort((a, b) => a - b));

function arbState(task: ArbTask, kind: (typeof KINDS)[number]): fc.Arbitrary<Item> {
  const attemptsBelowMax = fc.integer({ min: 0, max: task.maxAttempts - 1 });
  switch (kind) {
    case 'ready':
      return fc
        .tuple(attemptsBelowMax, sortedTimes(task.createdAt, 2))
        .map(([attempts, [availableAt, updatedAt]]) => {
          const item = baseItem(task, { attempts, availableAt: availableAt!, updatedAt: updatedAt! });
          const ready = readyKeysOf(item);
          return { ...item, status: TaskStatus.QUEUED, readyPk: ready.pk, readySk: ready.sk };
        });
    case 'delayed':
      // Due some time within the week (or already due, and not promoted yet).
      return fc
        .tuple(attemptsBelowMax, fc.integer({ min: task.createdAt, max: T0 + 7 * DAY }))
        .map(([attempts, availableAt]) => {
          const item = baseItem(task, { attempts, availableAt, updatedAt: task.createdAt });
          const ready = readyKeysOf(item);
          return {
            ...item,
            status: TaskStatus.QUEUED,
            delayPk: delaySweepPartition(item.shard as number),
            delayAt: availableAt,
            dueReadyPk: ready.pk,
            dueReadySk: ready.sk,
          };
        });
    case TaskStatus.RUNNING:
    case TaskStatus.CANCEL_REQUESTED:
      // Due, claimed, last renewed (in that order); the sweep key anywhere the slack allows.
      return fc
        .tuple(
          fc.integer({ min: 1, max: task.maxAttempts }),
          sortedTimes(task.createdAt, 3),
          fc.integer({ min: 0, max: SLACK }),
          fc.constantFrom('w-1', 'w-2'),
          fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
        )
        .map(([attempts, [availableAt, startedAt, renewedAt], ahead, leaseOwner, progress]) => {
          const leaseUntil = leaseExpiry(renewedAt!, config);
          return {
            ...baseItem(task, { attempts, availableAt: availableAt!, updatedAt: renewedAt! }),
            status: kind,
            leaseToken: Math.max(1, task.token),
            leaseOwner,
            leaseUntil,
            startedAt,
            sweepPk: leaseSweepPartition(shardForId(task.id)),
            sweepAt: leaseUntil + ahead,
            ...(progress === undefined ? {} : { progress }),
          };
        });
    default:
      return fc
        .tuple(fc.integer({ min: 0, max: task.maxAttempts }), sortedTimes(task.createdAt, 2))
        .map(([attempts, [availableAt, finishedAt]]) => ({
          ...baseItem(task, { attempts, availableAt: availableAt!, updatedAt: finishedAt! }),
          status: kind,
          finishedAt,
          expiresAt: retentionExpiry(finishedAt!, config),
          ...(kind === TaskStatus.SUCCESS ? { result: '{"ok":true}' } : { error: 'boom' }),
        }));
  }
}

const arbAnyState = fc
  .tuple(arbTask, fc.constantFrom(...KINDS))
  .chain(([task, kind]) => arbState(task, kind));

/** Picks one edge; a user's cancel less often than the rest, so walks get past the queue (cancel, retry, cancel...). */
function pickEdge(edges: Edge[], pick: number): Edge {
  const weight = (e: Edge) => (e.name === 'cancelledQueued' ? 1 : 4);
  let r = pick % edges.reduce((sum, e) => sum + weight(e), 0);
  for (const e of edges) {
    r -= weight(e);
    if (r < 0) return e;
  }
  throw new Error('unreachable');
}

describe('task state transitions (pure, fixed clock)', () => {
  it('every edge a state allows is accepted by its condition, keeps the index invariant and costs what it always cost', () => {
    const seen = new Set<EdgeName>();
    fc.assert(
      fc.property(arbAnyState, arbInputs, (state, inputs) => {
        expect(violations(state), 'the generated state').toEqual([]);
        const now = T0;
        const edges = edgesFrom(state, now, inputs);
        for (const edge of edges) {
          seen.add(edge.name);
          const after = takeEdge(state, edge, now);
          // A claim cannot be taken twice from the head it read; its undo puts the task back at that head.
          if (edge.name === 'claimed') {
            expect(holds(edge.t, after)).toBe(false);
            const undo: Edge = {
              name: 'claimUndone',
              t: claimUndone(edge.candidate!, after.writeId as string),
              indexWrites: { ready: 1, sweep: 1 },
            };
            seen.add('claimUndone');
            const undone = takeEdge(after, undo, now);
            for (const field of [
              'status',
              'attempts',
              INDEX.ready.partition,
              INDEX.ready.sort,
              INDEX.lease.partition,
              'leaseOwner',
              'leaseUntil',
            ])
              expect(undone[field], field).toEqual(state[field]);
          }
          // The same for a claim straight from the delay partition: once only; its undo puts the task in the
          // ready index (it is due), attempt given back.
          if (edge.name === 'claimedWhenDue') {
            expect(holds(edge.t, after)).toBe(false);
            const undo: Edge = {
              name: 'dueClaimUndone',
              t: dueClaimUndone(after as unknown as TaskItem, after.writeId as string, now),
              indexWrites: { ready: 1, sweep: 1 },
            };
            seen.add('dueClaimUndone');
            const undone = takeEdge(after, undo, now);
            expect(undone.status).toBe(TaskStatus.QUEUED);
            expect(undone.attempts).toBe(state.attempts);
            expect([undone.readyPk, undone.readySk]).toEqual([state.dueReadyPk, state.dueReadySk]);
          }
          // A renewal between recovery's read and its write makes recovery's fix refused; the holder's own edges still apply.
          if (edge.name === 'renewed') {
            for (const other of edges.filter((e) => e.leavesLease))
              expect(holds(other.t, after), `${other.name} after a renewal`).toBe(
                !other.name.startsWith('recovered'),
              );
          }
          // A cancel request refuses the holder's fail and release (it finishes the cancel instead) and recovery's
          // fix read before it; a success is still recorded.
          if (edge.name === 'cancelRequested') {
            for (const other of edges.filter((e) => e.leavesLease))
              expect(holds(other.t, after), `${other.name} after a cancel request`).toBe(
                other.name === 'completed',
              );
          }
        }
        // Exactly one way out of a lease: whichever edge applies first, every other one chosen from the same read is refused.
        // Conditions refuse what an edge must not do: promote a task before it is due, claim past the last attempt.
        if (state.status === TaskStatus.QUEUED && isSet(state.delayPk)) {
          expect(holds(promoted(state.delayPk as string, now), state)).toBe((state.delayAt as number) <= now);
          // A claim from the delay partition takes only a due task, of a type served, at the default priority.
          const types = [state.type as string];
          expect(holds(dueClaimOf(state, types, 'w', now), state)).toBe(
            (state.delayAt as number) <= now && state.priority === DEFAULT_PRIORITY,
          );
          expect(holds(dueClaimOf(state, ['another.type'], 'w', now), state)).toBe(false);
          expect(holds(dueClaimOf(state, types, 'w', now), { ...state, attempts: state.maxAttempts })).toBe(
            false,
          );
        }
        const claim = edges.find((e) => e.name === 'claimed');
        if (claim) expect(holds(claim.t, { ...state, attempts: state.maxAttempts })).toBe(false);
        const leaving = edges.filter((e) => e.leavesLease);
        for (const first of leaving) {
          const after = write(state, first.t);
          for (const other of leaving)
            if (other !== first)
              expect(holds(other.t, after), `${other.name} after ${first.name}`).toBe(false);
        }
      }),
      { numRuns: 1_000 },
    );
    // Every edge but enqueue (a put onto no item) was met; the walks below take that one.
    expect([...seen].sort()).toEqual(EDGES.filter((e) => e !== 'enqueued').sort());
  });

  it('random walks from enqueue keep the invariant at every step, through every edge', () => {
    const seen = new Set<EdgeName>();
    const step = fc.record({
      // A moment (renewals), a lease or two (expiry), or days (delayed tasks, retention).
      advance: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 20_000 }), weight: 4 },
        { arbitrary: fc.integer({ min: 0, max: 3 * MINUTE }), weight: 2 },
        { arbitrary: fc.integer({ min: 0, max: 8 * DAY }), weight: 1 },
      ),
      pick: fc.nat(),
      inputs: arbInputs,
    });
    // The invariant holds on every walk; each edge is met by some walk. A rare edge (a claim from the delay
    // partition undone at once) can miss a batch of 1,000 walks by chance, so walk further batches until each
    // edge was met: only an edge no walk can reach fails, not an unlucky seed.
    const walkBatch = () =>
      fc.assert(
        fc.property(
          arbTask,
          fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 7 * DAY })),
          fc.array(step, { minLength: 1, maxLength: 40 }),
          (task, delayMs, steps) => {
            let now = T0;
            const record = {
              ...baseItem(
                { ...task, createdAt: now, token: 0 },
                { attempts: 0, availableAt: now + delayMs, updatedAt: now },
              ),
            };
            delete record.ownerPk;
            delete record.ownerSk;
            const enqueue = enqueued(record as unknown as TaskItem, now);
            expect(holds(enqueue, undefined)).toBe(true);
            let item: Item = { ...applyTransition(record, enqueue), writeId: stamp() };
            seen.add('enqueued');
            expect(violations(item, now)).toEqual([]);
            expect(writeCost(undefined, item)).toEqual(
              expectedCost(delayMs === 0 ? { ready: 1, owner: 1 } : { delays: 1, owner: 1 }),
            );
            let lastClaim: { candidate?: Candidate; writeId: string } | undefined;
            for (const s of steps) {
              now += s.advance;
              const edges = edgesFrom(item, now, s.inputs);
              if (lastClaim && item.writeId === lastClaim.writeId)
                edges.push(
                  lastClaim.candidate
                    ? {
                        name: 'claimUndone',
                        t: claimUndone(lastClaim.candidate, lastClaim.writeId),
                        indexWrites: { ready: 1, sweep: 1 },
                        leavesLease: true,
                      }
                    : {
                        name: 'dueClaimUndone',
                        t: dueClaimUndone(item as unknown as TaskItem, lastClaim.writeId, now),
                        indexWrites: { ready: 1, sweep: 1 },
                        leavesLease: true,
                      },
                );
              if (edges.length === 0) break; // SUCCESS: nothing leaves it
              const edge = pickEdge(edges, s.pick);
              seen.add(edge.name);
              item = takeEdge(item, edge, now);
              lastClaim =
                edge.name === 'claimed'
                  ? { candidate: edge.candidate!, writeId: item.writeId as string }
                  : edge.name === 'claimedWhenDue'
                    ? { writeId: item.writeId as string }
                    : lastClaim;
            }
          },
        ),
        { numRuns: 1_000 },
      );
    for (let batch = 0; batch < 10 && seen.size < EDGES.length; batch++) walkBatch();
    expect([...seen].sort()).toEqual([...EDGES].sort());
  });

  it('a short task costs 8 write units (enqueue 3, claim 3, complete 2), and its renewals a heartbeat apart 1, 1, 1, 1, 3', () => {
    // The figures test/store-cost.test.ts measures on the store and the bench reports.
    fc.assert(
      fc.property(arbTask, (task) => {
        let now = T0;
        const record = baseItem(
          { ...task, createdAt: now, token: 0 },
          { attempts: 0, availableAt: now, updatedAt: now },
        );
        const queued: Item = {
          ...applyTransition(record, enqueued(record as unknown as TaskItem, now)),
          writeId: stamp(),
        };
        const enqueueCost = writeCost(undefined, queued);
        const candidate: Candidate = {
          id: task.id,
          type: task.type,
          shard: shardForId(task.id),
          readySk: queued.readySk as string,
        };
        const claim = claimed(candidate, 'w-1', now, leaseExpiry(now, config), config);
        let item = write(queued, claim);
        const claimCost = transitionCost(queued, claim);
        const renewals: number[] = [];
        for (let i = 0; i < 5; i++) {
          now += config.heartbeatIntervalMs;
          const lease = leaseOf(item);
          const leaseUntil = leaseExpiry(now, config);
          const renewal = renewed(lease, leaseUntil, sweepKeyAfterRenewal(lease.sweepAt, leaseUntil, config));
          renewals.push(transitionCost(item, renewal).total);
          item = write(item, renewal);
        }
        const complete = completed(
          leaseOf(item),
          now,
          storeResult(JSON.stringify({ ok: true }), 1).fields,
          config,
        );
        const completeCost = transitionCost(item, complete);
        expect(enqueueCost).toMatchObject({ table: 1, indexes: { ready: 1, owner: 1, sweep: 0 } });
        expect(claimCost).toMatchObject({ table: 1, indexes: { ready: 1, sweep: 1, owner: 0 } });
        expect(renewals).toEqual([1, 1, 1, 1, 3]);
        expect(completeCost).toMatchObject({ table: 1, indexes: { sweep: 1, ready: 0, owner: 0 } });
        expect(enqueueCost.total + claimCost.total + completeCost.total).toBe(8);
      }),
      { numRuns: 200 },
    );
  });

  it('under a lease the fence (claim token and owner) is the last condition part, the one the seeded bug swaps', () => {
    const lease = {
      taskId: 't',
      type: 'x',
      owner: 'w',
      token: 7,
      leaseUntil: T0,
      sweepAt: T0,
      shard: 0,
      priority: 0,
      createdAt: T0,
      availableAt: T0,
      attempts: 1,
      maxAttempts: 3,
      slots: [],
    };
    const fenced = [
      renewed(lease, T0, undefined),
      completed(lease, T0, storeResult('null', lease.token).fields, config),
      failedRetry(lease, T0, T0, storeError('e').fields),
      failedFinal(lease, T0, storeError('e').fields, config),
      released(lease, T0),
      cancelledRunning(lease, T0, config),
    ];
    for (const t of fenced) {
      const last = conditionOf({ assign: {}, require: t.require.slice(-1) }).params();
      expect(last.ConditionExpression).toContain('#leaseToken');
      expect(Object.values(last.ExpressionAttributeValues ?? {})).toEqual(expect.arrayContaining([7, 'w']));
    }
  });
});
