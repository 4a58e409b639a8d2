/**
 * Claim: the DynamoDB stand-in for `FOR UPDATE SKIP LOCKED`. Read a few more ready heads than there
 * are free slots, take them with conditional writes, and skip any another worker won, without waiting.
 */
import { shuffleInPlace } from '../ids.js';
import { claimLeaseUsable, leaseExpiry } from '../lease-rules.js';
import {
  delaySweepPartition,
  readyPriorityPrefix,
  SHARD_COUNT,
  shardForId,
  shardPartition,
  taskKey,
} from '../table-layout.js';
import type { Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import {
  conditionalUpdate,
  WriteOutcomeUnknownError,
  type WriteOptions,
  type WriteResult,
} from './conditional-write.js';
import { claimInput, parseInput, type ClaimInput, type Lease, type SlotLease } from './inputs.js';
import type { Candidate, ClaimState, UnknownClaim } from './claim-state.js';
import { LaneRound } from './claim-lanes.js';
import { fail, release } from './lease-writes.js';
import { readHeads } from './ready-heads.js';
import { limitsFor, releaseSlots, SlotGate } from './slots.js';
import { readPayload } from './task-body.js';
import { CostCount, countCost } from './cost-meter.js';
import { addCost, shareOf, type TaskCost } from './task-cost.js';
import { toTask, type TaskItem } from './task-item.js';
import { readTaskItem } from './task-reads.js';
import { deadline } from './dynamo.js';
import {
  asUpdate,
  claimed as claimEdge,
  claimedWhenDue,
  claimUndone,
  dueClaimUndone,
  type Transition,
} from './transitions.js';
import { TUNING } from '../tuning.js';

export interface Claimed {
  task: Task;
  lease: Lease;
}

export interface ClaimResult {
  claimed: Claimed[];
  /** Conditional writes that lost a race to another claimer (billed, but harmless). */
  lostRaces: number;
  /**
   * The round won only tasks handed to it by key (what it read, if anything, held no other): it says
   * nothing of other work waiting, so the worker need not read again at once.
   */
  handedOnly?: boolean;
}

type Attempt =
  | { outcome: 'won'; claimed: Claimed }
  /** `cost`: what the lost write cost (DynamoDB bills a refused write), charged to the round's wins. */
  | { outcome: 'lost'; cost?: Partial<TaskCost> }
  | { outcome: 'late' }
  /** Won, but its payload is gone: the task was failed (PAYLOAD_MISSING), not run. */
  | { outcome: 'dropped' }
  | { outcome: 'limited' }
  | { outcome: 'error'; error: unknown };

/**
 * Claims up to `input.max` due tasks; `state` is the claiming worker's memory between its rounds. The
 * round's lost races are charged to the tasks it won, in equal shares (task-cost.ts).
 */
export async function claim(
  ctx: StoreContext,
  rawInput: ClaimInput,
  state: ClaimState,
): Promise<ClaimResult> {
  const raceCost: Partial<TaskCost>[] = [];
  const result = await claimRound(ctx, rawInput, state, raceCost);
  if (result.claimed.length === 0 || raceCost.length === 0) return result;
  const share = shareOf(addCost(...raceCost), result.claimed.length);
  return {
    ...result,
    claimed: result.claimed.map((c) => ({
      ...c,
      lease: { ...c.lease, unrecorded: addCost(c.lease.unrecorded, share) },
    })),
  };
}

async function claimRound(
  ctx: StoreContext,
  rawInput: ClaimInput,
  state: ClaimState,
  raceCost: Partial<TaskCost>[],
): Promise<ClaimResult> {
  const input = parseInput(claimInput, 'claim', rawInput);
  const gate = new SlotGate(ctx, input.workerId);
  const limitedTypes = new Set<string>();
  const result: ClaimResult = { claimed: [], lostRaces: 0 };
  const errors: unknown[] = [];
  const room = () => input.max - result.claimed.length;
  const window = () =>
    Math.min(
      TUNING.claim.maxWindow,
      Math.max(
        TUNING.claim.minWindow,
        (room() + ctx.config.claimWindow - 1) * (state.randomized ? TUNING.claim.contendedWindowFactor : 1),
      ),
    );
  // A failing request (throttling, a deadline) ends the round; what was already won is still returned.
  const guard = async <T>(step: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await step();
    } catch (error) {
      errors.push(error);
      return undefined;
    }
  };

  // Claims of earlier rounds whose outcome was never learned: undo them before anything else.
  // Once such a claim's lease would have run out, recovery owns the task: it is dropped from the list.
  const startedAt = ctx.clock.now();
  await Promise.all(
    state
      .takeUnknownClaims()
      .filter((unknown) => unknown.leaseUntil > startedAt)
      .map((unknown) => undoClaim(ctx, unknown, { resends: 0 }).catch(() => state.noteUnknownClaim(unknown))),
  );
  const onUnknown = (unknown: UnknownClaim) => state.noteUnknownClaim(unknown);
  const endRound = () => {
    state.noteRound(result.lostRaces, ctx.random);
    // A round that won nothing and fixed nothing reports its failure; one that did either returns it.
    if (errors.length > 0 && result.claimed.length === 0 && gate.recovered === 0) throw errors[0];
    return result;
  };

  // Heads this round already tried (a spare may also come back in a partition read): never twice.
  const tried = new Set<string>();
  const take = async (fresh: Candidate[]) => {
    const batch = fresh.filter((c) => !tried.has(c.id));
    for (const c of batch) tried.add(c.id);
    // Each batch gets a lease from its own send time, so a long round does not shorten the last leases.
    const now = ctx.clock.now();
    const leaseUntil = leaseExpiry(now, ctx.config);
    const attempts = await Promise.all(
      // A failed attempt is an answer like the others: the round keeps what it already won.
      batch.map((c) =>
        claimOne(ctx, headClaim(c, input.workerId, now, leaseUntil, ctx.config), leaseUntil, gate, onUnknown),
      ),
    );
    tally(
      attempts,
      batch.map((c) => c.type),
    );
    return attempts;
  };
  /** Counts a batch's attempts; `types[j]` is the type of attempt j when known (a limited one is skipped after). */
  const tally = (attempts: Attempt[], types: (string | undefined)[]) => {
    for (const [j, attempt] of attempts.entries()) {
      if (attempt.outcome === 'won') result.claimed.push(attempt.claimed);
      else if (attempt.outcome === 'lost') {
        result.lostRaces++;
        if (attempt.cost) raceCost.push(attempt.cost);
      } else if (attempt.outcome === 'limited' && types[j] !== undefined) limitedTypes.add(types[j]);
      else if (attempt.outcome === 'error') errors.push(attempt.error);
    }
  };
  /** Takes heads in the given order, as many at a time as there is room, skipping limited types. */
  const takeInOrder = async (heads: Candidate[]) => {
    let pending = heads;
    while (room() > 0 && errors.length === 0) {
      pending = pending.filter((c) => !limitedTypes.has(c.type));
      if (pending.length === 0) return;
      await take(pending.splice(0, room()));
    }
  };

  // Where a task was just enqueued comes first (one query finds what the kick was for), then the rest.
  const hints = state.takeHints().filter((h) => input.types.includes(h.type));
  const isHint = (p: { type: string; shard: number }) =>
    hints.some((h) => h.type === p.type && h.shard === p.shard);
  const partitions = [
    ...hints,
    ...visitOrder(input.types, (count) => state.startPartition(input.workerId, count), ctx.random).filter(
      (p) => !isHint(p),
    ),
  ];
  // Partitions are read in waves of growing size (1, 1, 2, 4, then 8 at a time), each wave's reads
  // in parallel: a worker with plenty of work still reads only its own partition, and one looking for
  // the single task an enqueue just kicked it for finds it within a few round trips, not after up to
  // 16 x types sequential queries (seconds when many types are served).
  const readPartition = async ({ type, shard }: { type: string; shard: number }) => {
    const partition = shardPartition(type, shard);
    const now = ctx.clock.now();
    if (limitedTypes.has(type) || state.isDrained(partition, now, ctx.config.pollIntervalMs))
      return undefined;
    const admitted = await guard(() => gate.mayAdmit(type));
    if (admitted === undefined) return undefined;
    if (!admitted) {
      limitedTypes.add(type);
      return undefined;
    }
    const heads = await guard(() => readHeads(ctx, partition, type, shard, window()));
    return heads ? { type, partition, now, ...heads } : undefined;
  };
  // A partition named by a hint is read at once, beside the lanes: the task a kick was sent for is
  // then found in one round trip. (Its heads are re-checked by the claim write like any other.)
  const hinted =
    hints.length > 0 ? Promise.all(partitions.slice(0, hints.length).map(readPartition)) : undefined;

  // Ready tasks offered by key: see 1a. Won by key: a round whose every win was handed to it found no
  // other work in what it read, and says so (handedOnly: the worker keeps its idle pace instead of
  // reading every partition again at once).
  let wonByKey = 0;
  const endRoundTold = (): ClaimResult => {
    const ended = endRound();
    return ended.claimed.length > 0 && wonByKey === ended.claimed.length
      ? { ...ended, handedOnly: true }
      : ended;
  };
  const takeOffered = async () => {
    if (room() <= 0 || errors.length > 0) return false;
    const offered = state.takeOffered(input.types, room());
    if (offered.length === 0) return false;
    const won = (await take(offered)).filter((a) => a.outcome === 'won').length;
    wonByKey += won;
    return won > 0;
  };
  // A kick's run takes what it was handed before it reads a lane: a task above the default priority
  // was kicked for on its own, to an invocation that reads the lanes first.
  if (input.handedFirst && (await takeOffered())) return endRoundTold();

  // 1. Tasks above the default priority, of every type served, highest first (the lanes).
  const lanes = new LaneRound(ctx, state, input.types);
  await guard(async () => {
    for (;;) {
      if (room() <= 0 || errors.length > 0) return;
      const { takeable, readMore } = await lanes.aboveDefault(window(), limitedTypes);
      // Contended, workers that read the same lane pick at random among heads of equal priority.
      if (state.randomized) shuffleWithinPriority(takeable, ctx.random);
      if (takeable.length > 0) await takeInOrder(takeable);
      else if (readMore === undefined) return;
    }
  });

  // 1a. Ready tasks offered by key (an enqueue in this process, the kick that started this run): one
  // write each, no read; offers that arrive during the reads below are taken between their waves.
  // A round that won an offered task returns at once, so it starts now (the next round reads on).
  if (await takeOffered()) return endRoundTold();

  // 1b. Delayed tasks this worker was told fall due, once due (a burst it was started ahead of): claimed
  // straight from their delay partition, at the default priority only (every head above it was just
  // taken), by types it may take without a concurrency slot. No promotion write, no ready read.
  if (room() > 0 && errors.length === 0 && state.dueWaiting > 0) {
    const direct = input.types.filter((type) => limitsFor(ctx, type).length === 0);
    if (direct.length === 0 || direct.length > TUNING.claim.maxInValues) state.dropDue();
    for (;;) {
      if (room() <= 0 || errors.length > 0) break;
      const due = state.takeDue(ctx.clock.now(), room());
      if (due.length === 0) break;
      const now = ctx.clock.now();
      const leaseUntil = leaseExpiry(now, ctx.config);
      const attempts = await Promise.all(
        due.map((d) =>
          claimOne(
            ctx,
            dueClaim(d.id, direct, input.workerId, now, leaseUntil, ctx.config),
            leaseUntil,
            gate,
            onUnknown,
          ),
        ),
      );
      tally(attempts, []);
      // Another worker took one: this shard is left to it. Otherwise this worker owns the shard for now.
      if (attempts.some((a) => a.outcome === 'lost')) state.noteDueLost();
      else state.noteDueWon();
    }
  }

  // While this worker still holds due tasks it was offered, it has its work: the ready partitions (16
  // per type, most of them empty in a burst of delayed tasks) are read once that list is done.
  if (state.dueWaiting > 0) {
    state.noteRound(result.lostRaces, ctx.random);
    if (errors.length > 0 && result.claimed.length === 0) throw errors[0];
    return result;
  }

  // 2. Default priority: heads left over from the last round first, then the shards.
  if (room() > 0 && errors.length === 0) {
    // Contended, spare heads are likely taken already: a query costs a tenth of a lost write.
    const spare = state.randomized
      ? []
      : state.takeSpare(input.types, ctx.clock.now(), ctx.config.pollIntervalMs, room());
    if (spare.length > 0 && (await take(spare)).some((a) => a.outcome === 'lost')) state.dropSpare();
  }
  const emptyThisRound = new Set<string>();
  const leftOver: Candidate[] = [];
  // Spares are as old as the oldest read they came from: kept with a later time, stale heads would be
  // tried as fresh in the next rounds (lost races).
  let leftOverReadAt = Number.POSITIVE_INFINITY;
  // The hinted partitions (already being read) are a wave of their own: what the kick was for is
  // taken as soon as its read answers, not after the next partition's read too. A round that won
  // there returns at once, so its tasks start now; the worker's next round reads on for the room
  // left (starting them at the end of a longer round kept them waiting for up to 16 more reads).
  const waves = hinted ? [hints.length, ...TUNING.claim.readWaves] : TUNING.claim.readWaves;
  let endedEarly = false;
  for (let w = 0, from = 0; from < partitions.length && room() > 0 && errors.length === 0; w++) {
    if (w > 0 && (await takeOffered())) {
      endedEarly = true;
      break;
    }
    const size = waves[w] ?? TUNING.claim.laterWave;
    const wave = partitions.slice(from, from + size);
    from += size;
    const reads = w === 0 && hinted ? await hinted : await Promise.all(wave.map(readPartition));
    for (const read of reads) {
      if (!read) continue;
      const { type, partition, now, candidates, exhausted } = read;
      if (room() <= 0 || errors.length > 0 || limitedTypes.has(type)) {
        // Read in this wave but not needed: kept as spares for the next rounds.
        leftOver.push(...candidates);
        if (candidates.length > 0) leftOverReadAt = Math.min(leftOverReadAt, now);
        continue;
      }
      if (state.randomized) {
        // The others that read this partition see the same heads: pick at random; contended, take only
        // a share of what is there (all that is needed when it is full, a few when it runs thin) and
        // move on instead of retrying.
        shuffleWithinPriority(candidates, ctx.random);
        const share = state.contended
          ? Math.ceil(candidates.length / TUNING.claim.contendedWindowFactor)
          : candidates.length;
        await take(candidates.splice(0, Math.min(share, room())));
      } else {
        while (candidates.length > 0 && room() > 0 && !limitedTypes.has(type) && errors.length === 0)
          await take(candidates.splice(0, room()));
        if (candidates.length > 0 && errors.length === 0 && !limitedTypes.has(type)) {
          leftOver.push(...candidates);
          leftOverReadAt = Math.min(leftOverReadAt, now);
        }
      }
      // Every head the partition held was read and taken (won or lost to another): it is empty for now.
      if (exhausted && candidates.length === 0 && errors.length === 0 && !limitedTypes.has(type)) {
        state.noteDrained(partition, now);
        emptyThisRound.add(partition);
      }
    }
    if (w === 0 && hinted && result.claimed.length > 0) {
      endedEarly = true;
      break;
    }
  }
  if (!state.randomized && leftOver.length > 0 && errors.length === 0)
    state.keepSpare(leftOver.slice(0, TUNING.claim.maxWindow), leftOverReadAt);

  // 3. Below the default priority: only once no default-priority task of a type served waits.
  if (room() > 0 && errors.length === 0 && !endedEarly && lanes.hasBelowDefault()) {
    const now = ctx.clock.now();
    const defaultsEmpty = partitions.every(({ type, shard }) => {
      const partition = shardPartition(type, shard);
      return (
        limitedTypes.has(type) ||
        emptyThisRound.has(partition) ||
        state.isDrained(partition, now, ctx.config.pollIntervalMs)
      );
    });
    if (defaultsEmpty) {
      const below = await guard(() => lanes.belowDefault(window(), limitedTypes));
      if (below) await guard(() => takeInOrder(below));
      // A lane serving work below the default is read every round while it does.
      for (const type of new Set((below ?? []).map((c) => c.type)))
        state.noteLane(type, { readAt: now, waiting: true, below: true });
    }
  }
  // Ended early for an offer that arrived between its reads, with nothing else won: as handed only.
  return endRoundTold();
}

/**
 * The partitions a round visits: first the worker's own (moving on by one each round so a lone
 * worker still sees every shard), then the rest in random order. Workers whose own partition runs
 * dry scatter instead of all moving to the same neighbour.
 */
function visitOrder(
  types: string[],
  startPartition: (count: number) => number,
  random: () => number,
): { type: string; shard: number }[] {
  const all = types.flatMap((type) => Array.from({ length: SHARD_COUNT }, (_, shard) => ({ type, shard })));
  const start = startPartition(all.length);
  const [own] = all.splice(start, 1);
  shuffleInPlace(all, random);
  return [own!, ...all];
}

type OnUnknownClaim = (unknown: UnknownClaim) => void;

/**
 * One claim write: the slots its type needs first (none for a due claim, whose condition excludes
 * limited types), its edge, and what to remember if its outcome is never learned.
 */
interface ClaimWrite {
  taskId: string;
  slotsOf?: string;
  edge: Transition;
  unknown: Omit<UnknownClaim, 'writeId' | 'leaseUntil'>;
}

/** The claim of a ready head, as read. */
function headClaim(
  c: Candidate,
  workerId: string,
  now: number,
  leaseUntil: number,
  config: StoreContext['config'],
): ClaimWrite {
  return {
    taskId: c.id,
    slotsOf: c.type,
    edge: claimEdge(c, workerId, now, leaseUntil, config),
    unknown: { candidate: c },
  };
}

/** The claim of a due delayed task straight from its delay partition. */
function dueClaim(
  id: string,
  types: readonly string[],
  workerId: string,
  now: number,
  leaseUntil: number,
  config: StoreContext['config'],
): ClaimWrite {
  const shard = shardForId(id);
  return {
    taskId: id,
    edge: claimedWhenDue(
      { shard, delayPartition: delaySweepPartition(shard) },
      types,
      workerId,
      now,
      leaseUntil,
      config,
    ),
    unknown: { dueTaskId: id },
  };
}

/**
 * One claim: its slots, its conditional write, the payload's read, and every way it can end (never
 * throws). What its requests cost goes with the lease (`unrecorded`) to the next write of the task.
 */
async function claimOne(
  ctx: StoreContext,
  write: ClaimWrite,
  leaseUntil: number,
  gate: SlotGate,
  onUnknown: OnUnknownClaim,
): Promise<Attempt> {
  const count = new CostCount();
  const attempt = await countCost(count, () => claimWrite(ctx, write, leaseUntil, gate, onUnknown));
  if (attempt.outcome === 'lost') return { outcome: 'lost', cost: count.snapshot() };
  if (attempt.outcome !== 'taken') return attempt;
  ctx.heldItems.set(attempt.item);
  const claimed: Claimed = {
    ...attempt.claimed,
    // A claim moves the task's index entry: out of the ready index (or a delay partition) into the lease sweep.
    lease: {
      ...attempt.claimed.lease,
      unrecorded: addCost(count.snapshot(), { indexWriteUnits: CLAIM_INDEX_WRITES }),
    },
  };
  return withPayload(ctx, claimed, attempt.item);
}

/** A claim's index writes: its entry leaves one partition (ready, or delay sweep) for the lease sweep. */
const CLAIM_INDEX_WRITES = 2;

/** The claim itself: slots, then the conditional write. */
async function claimWrite(
  ctx: StoreContext,
  write: ClaimWrite,
  leaseUntil: number,
  gate: SlotGate,
  onUnknown: OnUnknownClaim,
): Promise<Exclude<Attempt, { outcome: 'won' }> | { outcome: 'taken'; claimed: Claimed; item: TaskItem }> {
  let slots: SlotLease[] = [];
  try {
    if (write.slotsOf !== undefined) {
      const taken = await gate.acquire(write.slotsOf, write.taskId, leaseUntil);
      if (!taken) return { outcome: 'limited' };
      slots = taken;
    }
  } catch (error) {
    return { outcome: 'error', error };
  }
  ctx.events.emit('claim:intent', { taskId: write.taskId });
  let written: WriteResult<TaskItem>;
  try {
    written = await conditionalUpdate<TaskItem>(
      writeTargetOf(ctx),
      taskKey(write.taskId),
      asUpdate(write.edge),
      {
        resends: 1,
      },
    );
  } catch (error) {
    // Not even a read could tell whether the claim applied: take it back if it did, so the task
    // is not left RUNNING under a worker that never runs it, with an attempt spent.
    // If the undo fails too, the next rounds try it again.
    if (error instanceof WriteOutcomeUnknownError) {
      const unknown = { ...write.unknown, writeId: error.writeId, leaseUntil } as UnknownClaim;
      await undoClaim(ctx, unknown).catch(() => onUnknown(unknown));
    }
    await releaseSlots(ctx, gate.holder, slots).catch(() => undefined);
    return { outcome: 'error', error };
  }
  try {
    if (!written.applied) {
      await releaseSlots(ctx, gate.holder, slots);
      return { outcome: 'lost' };
    }
    const claimed = claimedFrom(written.item, slots);
    if (!claimLeaseUsable(claimed.lease.leaseUntil, ctx.clock.now(), ctx.config)) {
      // The write landed too late to start safely: another claimer may take over the task and its
      // slots any moment. Give it back (attempt not spent); if recovery already requeued it, the
      // release is refused by its token and nothing changes.
      await release(ctx, { lease: claimed.lease }).catch(() => undefined);
      // Not a race with another claimer: it must not make this worker act contended.
      return { outcome: 'late' };
    }
    return { outcome: 'taken', claimed, item: written.item };
  } catch (error) {
    return { outcome: 'error', error };
  }
}

/**
 * A won claim with its payload: read from the payload's own item when it did not fit in the task item
 * (task-body.ts), once per claim. A read that fails gives the task back (attempt not spent); a payload
 * that is gone (past `maxWaitDays`, or an enqueue that died between its two writes) fails the task
 * for good, since it can never run as it was asked.
 */
async function withPayload(ctx: StoreContext, claimed: Claimed, item: TaskItem): Promise<Attempt> {
  if (item.payloadBytes === undefined) return { outcome: 'won', claimed };
  let payload: string | undefined;
  const count = new CostCount();
  let lease = claimed.lease;
  try {
    payload = await countCost(count, () => readPayload(ctx, item, deadline(ctx.config.requestDeadlineMs)));
    lease = { ...lease, unrecorded: addCost(lease.unrecorded, count.snapshot()) };
  } catch (error) {
    await release(ctx, { lease }).catch(() => undefined);
    return { outcome: 'error', error };
  }
  if (payload === undefined) {
    await fail(ctx, { lease, error: payloadMissing(ctx, item), retryable: false }).catch(() => undefined);
    return { outcome: 'dropped' };
  }
  return { outcome: 'won', claimed: { lease, task: toTask(item, { ...item, payload }) } };
}

const payloadMissing = (ctx: StoreContext, item: TaskItem) =>
  `PAYLOAD_MISSING: the payload of task ${item.id} is gone: a task keeps its payload ${ctx.config.maxWaitDays} days ` +
  `(LEASEHOLD_MAX_WAIT_DAYS) after its due time plus its retention, or its enqueue failed between its two writes. Enqueue it again.`;

/**
 * Reverts a claim that may have applied (our write id is on the item), attempt given back: a ready head
 * goes back to that head; a due delayed task, read back first for the keys of its place, to the ready
 * index (it is due). Another write since (or none of ours) leaves the task as it is.
 */
async function undoClaim(
  ctx: StoreContext,
  unknown: UnknownClaim,
  options: WriteOptions = {},
): Promise<void> {
  if ('candidate' in unknown) {
    await conditionalUpdate(
      writeTargetOf(ctx),
      taskKey(unknown.candidate.id),
      asUpdate(claimUndone(unknown.candidate, unknown.writeId)),
      options,
    );
    return;
  }
  const item = await readTaskItem(ctx, unknown.dueTaskId, deadline(ctx.config.requestDeadlineMs));
  if (item?.writeId !== unknown.writeId) return;
  await conditionalUpdate(
    writeTargetOf(ctx),
    taskKey(unknown.dueTaskId),
    asUpdate(dueClaimUndone(item, unknown.writeId, ctx.clock.now())),
    options,
  );
}

function claimedFrom(item: TaskItem, slots: SlotLease[]): Claimed {
  return {
    // With what the item holds inline; a payload kept apart is read next (withPayload).
    task: toTask(item, item),
    lease: {
      taskId: item.id,
      type: item.type,
      owner: item.leaseOwner!,
      token: item.leaseToken,
      leaseUntil: item.leaseUntil!,
      sweepAt: item.sweepAt!,
      shard: item.shard,
      priority: item.priority,
      createdAt: item.createdAt,
      availableAt: item.availableAt,
      attempts: item.attempts,
      maxAttempts: item.maxAttempts,
      slots,
    },
  };
}

/** Random order among heads of equal priority; a higher priority still comes first (the query returned them sorted). */
function shuffleWithinPriority(candidates: Candidate[], random: () => number): void {
  const groups: Candidate[][] = [];
  for (const c of candidates) {
    const last = groups.at(-1);
    if (last && readyPriorityPrefix(last[0]!.readySk) === readyPriorityPrefix(c.readySk)) last.push(c);
    else groups.push([c]);
  }
  for (const group of groups) shuffleInPlace(group, random);
  candidates.splice(0, candidates.length, ...groups.flat());
}
