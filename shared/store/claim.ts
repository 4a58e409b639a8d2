/**
 * Claim: the DynamoDB stand-in for `FOR UPDATE SKIP LOCKED`. Read a few more ready heads than there
 * are free slots, take them with conditional writes, and skip any another worker won, without waiting.
 */
import { claimLeaseUsable, leaseExpiry } from '../lease-rules.js';
import { readyPriorityPrefix, SHARD_COUNT, shardPartition, taskKey } from '../table-layout.js';
import type { Task } from '../task-model.js';
import { writeTargetOf, type StoreContext } from './context.js';
import {
  conditionalUpdate,
  WriteOutcomeUnknownError,
  type WriteOptions,
  type WriteResult,
} from './conditional-write.js';
import { claimInput, parseInput, type ClaimInput, type Lease, type SlotLease } from './inputs.js';
import type { Candidate, ClaimState } from './claim-state.js';
import { LaneRound } from './claim-lanes.js';
import { release } from './lease-writes.js';
import { readHeads } from './ready-heads.js';
import { releaseSlots, SlotGate } from './slots.js';
import { toTask, type TaskItem } from './task-item.js';
import { asUpdate, claimed as claimEdge, claimUndone } from './transitions.js';

export interface Claimed {
  task: Task;
  lease: Lease;
}

export interface ClaimResult {
  claimed: Claimed[];
  /** Conditional writes that lost a race to another claimer (billed, but harmless). */
  lostRaces: number;
}

/**
 * Contended, a worker picks at random among this many times more heads than it needs (and takes at
 * most this fraction of a thin partition): two workers on one partition then mostly pick different
 * tasks. Index entries are keys only, so a wider read costs little (100 heads are about 2 read units,
 * eventually consistent).
 */
const CONTENDED_WINDOW_FACTOR = 8;
const MAX_WINDOW = 100;
/**
 * A query is billed per 4 KB read, and a keys-only head is about 100 bytes: reading 32 heads costs
 * what reading one does. The heads not taken now are kept for the next rounds (spares).
 */
const MIN_WINDOW = 32;
/**
 * How many partitions each wave of a round reads at once; after these, 8 at a time. Small at first:
 * a worker with work fills its room from one or two partitions and reads no more than it did one at a
 * time (the benchmark's queries per task and lost races hold), while a worker looking for one new task
 * has the kick's hint for it (read beside the lanes). Bounded: a hundred queries at once make each
 * wait behind the others (an emulator answers them one by one), and a read past its deadline fails
 * the round.
 */
const READ_WAVES = [1, 1, 2, 4];
const LATER_WAVE = 8;

type Attempt =
  | { outcome: 'won'; claimed: Claimed }
  | { outcome: 'lost' }
  | { outcome: 'late' }
  | { outcome: 'limited' }
  | { outcome: 'error'; error: unknown };

/** Claims up to `input.max` due tasks; `state` is the claiming worker's memory between its rounds. */
export async function claim(
  ctx: StoreContext,
  rawInput: ClaimInput,
  state: ClaimState,
): Promise<ClaimResult> {
  const input = parseInput(claimInput, 'claim', rawInput);
  const gate = new SlotGate(ctx, input.workerId);
  const limitedTypes = new Set<string>();
  const result: ClaimResult = { claimed: [], lostRaces: 0 };
  const errors: unknown[] = [];
  const room = () => input.max - result.claimed.length;
  const window = () =>
    Math.min(
      MAX_WINDOW,
      Math.max(
        MIN_WINDOW,
        (room() + ctx.config.claimWindow - 1) * (state.randomized ? CONTENDED_WINDOW_FACTOR : 1),
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
      .map((unknown) =>
        undoClaim(ctx, unknown.candidate, unknown.writeId, { resends: 0 }).catch(() =>
          state.noteUnknownClaim(unknown),
        ),
      ),
  );
  const onUnknown = (candidate: Candidate, writeId: string, leaseUntil: number) =>
    state.noteUnknownClaim({ candidate, writeId, leaseUntil });

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
        claimOne(ctx, c, input.workerId, now, leaseUntil, gate, onUnknown).catch(
          (error: unknown): Attempt => ({ outcome: 'error', error }),
        ),
      ),
    );
    for (const [j, attempt] of attempts.entries()) {
      if (attempt.outcome === 'won') result.claimed.push(attempt.claimed);
      else if (attempt.outcome === 'lost') result.lostRaces++;
      else if (attempt.outcome === 'limited') limitedTypes.add(batch[j]!.type);
      else if (attempt.outcome === 'error') errors.push(attempt.error);
    }
    return attempts;
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
  for (let w = 0, from = 0; from < partitions.length && room() > 0 && errors.length === 0; w++) {
    const size = (READ_WAVES[w] ?? LATER_WAVE) + (w === 0 ? hints.length : 0);
    const wave = partitions.slice(from, from + size);
    from += size;
    const reads =
      w === 0 && hinted
        ? [...(await hinted), ...(await Promise.all(wave.slice(hints.length).map(readPartition)))]
        : await Promise.all(wave.map(readPartition));
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
          ? Math.ceil(candidates.length / CONTENDED_WINDOW_FACTOR)
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
  }
  if (!state.randomized && leftOver.length > 0 && errors.length === 0)
    state.keepSpare(leftOver.slice(0, MAX_WINDOW), leftOverReadAt);

  // 3. Below the default priority: only once no default-priority task of a type served waits.
  if (room() > 0 && errors.length === 0 && lanes.hasBelowDefault()) {
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
  state.noteRound(result.lostRaces, ctx.random);
  // A round that won nothing and fixed nothing reports its failure; one that did either returns it.
  if (errors.length > 0 && result.claimed.length === 0 && gate.recovered === 0) throw errors[0];
  return result;
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
  shuffle(all, random);
  return [own!, ...all];
}

type OnUnknownClaim = (c: Candidate, writeId: string, leaseUntil: number) => void;

async function claimOne(
  ctx: StoreContext,
  c: Candidate,
  workerId: string,
  now: number,
  leaseUntil: number,
  gate: SlotGate,
  onUnknown: OnUnknownClaim,
): Promise<Attempt> {
  const slots = await gate.acquire(c.type, c.id, leaseUntil);
  if (!slots) return { outcome: 'limited' };
  const e = asUpdate(claimEdge(c, workerId, now, leaseUntil, ctx.config));
  ctx.events.emit('claim:intent', { taskId: c.id });
  let written: WriteResult<TaskItem>;
  try {
    written = await conditionalUpdate<TaskItem>(writeTargetOf(ctx), taskKey(c.id), e, { resends: 1 });
  } catch (error) {
    // Not even a read could tell whether the claim applied: take it back if it did, so the task
    // is not left RUNNING under a worker that never runs it, with an attempt spent.
    // If the undo fails too, the next rounds try it again.
    if (error instanceof WriteOutcomeUnknownError)
      await undoClaim(ctx, c, error.writeId).catch(() => onUnknown(c, error.writeId, leaseUntil));
    await releaseSlots(ctx, workerId, slots).catch(() => undefined);
    throw error;
  }
  if (!written.applied) {
    await releaseSlots(ctx, workerId, slots);
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
  return { outcome: 'won', claimed };
}

/** Reverts a claim that may have applied (our write id is on the item): QUEUED at its old head, attempt given back. */
async function undoClaim(
  ctx: StoreContext,
  c: Candidate,
  writeId: string,
  options: WriteOptions = {},
): Promise<void> {
  await conditionalUpdate(writeTargetOf(ctx), taskKey(c.id), asUpdate(claimUndone(c, writeId)), options);
}

function claimedFrom(item: TaskItem, slots: SlotLease[]): Claimed {
  return {
    task: toTask(item),
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
  for (const group of groups) shuffle(group, random);
  candidates.splice(0, candidates.length, ...groups.flat());
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
