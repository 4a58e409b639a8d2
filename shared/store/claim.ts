/**
 * Claim: the DynamoDB stand-in for `FOR UPDATE SKIP LOCKED`. Read a few more ready heads than there
 * are free slots, take them with conditional writes, and skip any another worker won, without waiting.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { leaseExpiry, sweepKeyFor } from '../lease-rules.js';
import { INDEX, leaseSweepPartition, readyPartition, readyPriorityPrefix, SHARD_COUNT, taskIdFromPk, taskKey } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import type { StoreContext } from './context.js';
import { hasAttemptsLeft, stillQueuedAt } from './conditions.js';
import { deadline, isConditionalCheckFailed, isTransient, wasRetried } from './dynamo.js';
import { Expression } from './expression.js';
import { claimInput, parseInput, type ClaimInput, type Lease, type SlotLease } from './inputs.js';
import type { Candidate, ClaimState } from './claim-state.js';
import { releaseSlots, SlotGate } from './slots.js';
import type { RecoveryFix, RecoveryReport } from './recovery.js';
import { readTaskItem } from './task-reads.js';
import { toTask, type TaskItem } from './task-item.js';

export interface Claimed {
  task: Task;
  lease: Lease;
}

export interface ClaimResult {
  claimed: Claimed[];
  /** Conditional writes that lost a race to another claimer (billed, but harmless). */
  lostRaces: number;
  /** Ready-index queries this round made. */
  queries: number;
  /** Tasks of dead holders this round recovered on taking over their expired concurrency slots. */
  recovered: RecoveryReport['fixes'];
}

/**
 * Contended, a worker picks at random among this many times more heads than it needs (and takes at
 * most this fraction of a thin partition): two workers on one partition then mostly pick different
 * tasks. Index entries are keys only, so a wider read costs little (100 heads are about 2 read units,
 * eventually consistent).
 */
const CONTENDED_WINDOW_FACTOR = 8;
const MAX_WINDOW = 100;

type Attempt = { outcome: 'won'; claimed: Claimed } | { outcome: 'lost' } | { outcome: 'limited' } | { outcome: 'error'; error: unknown };

export async function claim(
  ctx: StoreContext,
  rawInput: ClaimInput,
  state: ClaimState,
  recoverStranded: (taskId: string, holder: string, onFix: (fix: RecoveryFix) => void) => Promise<'lease-valid' | 'done'>,
): Promise<ClaimResult> {
  const input = parseInput(claimInput, 'claim', rawInput);
  const now = ctx.clock.now();
  const leaseUntil = leaseExpiry(now, ctx.config);
  const recovered: RecoveryReport['fixes'] = [];
  const gate = new SlotGate(ctx, input.workerId, (taskId, holder) => recoverStranded(taskId, holder, (fix) => recovered.push(fix)));
  const partitions = visitOrder(input.types, (count) => state.startPartition(input.workerId, count), ctx.random);
  const limitedTypes = new Set<string>();
  const result: ClaimResult = { claimed: [], lostRaces: 0, queries: 0, recovered: [] };
  const errors: unknown[] = [];

  const take = async (batch: Candidate[]) => {
    const attempts = await Promise.all(batch.map((c) => tryClaim(ctx, c, input.workerId, now, leaseUntil, gate)));
    for (const [j, attempt] of attempts.entries()) {
      if (attempt.outcome === 'won') result.claimed.push(attempt.claimed);
      else if (attempt.outcome === 'lost') result.lostRaces++;
      else if (attempt.outcome === 'limited') limitedTypes.add(batch[j]!.type);
      else errors.push(attempt.error);
    }
    return attempts;
  };

  // Heads left over from the last round first; if any was gone, the query below reads fresh ones.
  // Contended, spare heads are likely taken already: a query costs a tenth of a lost write.
  const spare = state.randomized ? [] : state.takeSpare(input.types, now, ctx.config.pollIntervalMs, input.max);
  if (spare.length > 0 && (await take(spare)).some((a) => a.outcome === 'lost')) state.dropSpare();

  for (let i = 0; i < partitions.length && result.claimed.length < input.max && errors.length === 0; i++) {
    const { type, shard } = partitions[i]!;
    // A partition this worker found empty within the last poll is not queried again until then.
    const partition = `${type}#${shard}`;
    if (limitedTypes.has(type) || state.isDrained(partition, now, ctx.config.pollIntervalMs)) continue;
    if (!(await gate.mayAdmit(type))) {
      limitedTypes.add(type);
      continue;
    }
    const window = Math.min(MAX_WINDOW, (input.max - result.claimed.length + ctx.config.claimWindow - 1) * (state.randomized ? CONTENDED_WINDOW_FACTOR : 1));
    const { candidates, exhausted } = await readHeads(ctx, type, shard, window);
    result.queries++;

    if (state.randomized) {
      // The others that read this partition see the same heads: pick at random (a higher priority
      // first); contended, take only a share of what is there (all that is needed when it is full, a
      // few when it runs thin) and move on instead of retrying.
      shuffleWithinPriority(candidates, ctx.random);
      const share = state.contended ? Math.ceil(candidates.length / CONTENDED_WINDOW_FACTOR) : candidates.length;
      await take(candidates.splice(0, Math.min(share, input.max - result.claimed.length)));
    } else {
      while (candidates.length > 0 && result.claimed.length < input.max && !limitedTypes.has(type)) {
        await take(candidates.splice(0, input.max - result.claimed.length));
        // A failing table (throttling, deadline) stops the round; what was already won is still returned.
        if (errors.length > 0) break;
      }
      if (candidates.length > 0 && errors.length === 0 && !limitedTypes.has(type)) state.keepSpare(candidates, now);
    }
    // Every head the partition held was read and taken (won or lost to another): it is empty for now.
    if (exhausted && candidates.length === 0 && errors.length === 0 && !limitedTypes.has(type)) state.noteDrained(partition, now);
  }
  result.recovered = recovered;
  state.noteRound(result.lostRaces, ctx.random);
  if (errors.length > 0 && result.claimed.length === 0) throw errors[0];
  return result;
}

/**
 * The partitions a round visits: first the worker's own (moving on by one each round so a lone
 * worker still sees every shard), then the rest in random order. Workers whose own partition runs
 * dry scatter instead of all moving to the same neighbour.
 */
function visitOrder(types: string[], startPartition: (count: number) => number, random: () => number): { type: string; shard: number }[] {
  const all = types.flatMap((type) => Array.from({ length: SHARD_COUNT }, (_, shard) => ({ type, shard })));
  const start = startPartition(all.length);
  const [own] = all.splice(start, 1);
  shuffle(all, random);
  return [own!, ...all];
}

/** The first `limit` heads of one ready partition; `exhausted` when there were no more. */
async function readHeads(ctx: StoreContext, type: string, shard: number, limit: number): Promise<{ candidates: Candidate[]; exhausted: boolean }> {
  const out = await ctx.doc.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: INDEX.ready.name,
      KeyConditionExpression: '#p = :p',
      ExpressionAttributeNames: { '#p': INDEX.ready.partition },
      ExpressionAttributeValues: { ':p': readyPartition(type, shard) },
      Limit: limit,
    }),
    deadline(ctx.config.requestDeadlineMs),
  );
  const candidates = (out.Items ?? []).map((item) => ({ id: taskIdFromPk(item.pk as string), type, shard, readySk: item[INDEX.ready.sort] as string }));
  return { candidates, exhausted: candidates.length < limit || out.LastEvaluatedKey === undefined };
}

async function tryClaim(ctx: StoreContext, c: Candidate, workerId: string, now: number, leaseUntil: number, gate: SlotGate): Promise<Attempt> {
  try {
    return await claimOne(ctx, c, workerId, now, leaseUntil, gate);
  } catch (error) {
    return { outcome: 'error', error };
  }
}

async function claimOne(ctx: StoreContext, c: Candidate, workerId: string, now: number, leaseUntil: number, gate: SlotGate): Promise<Attempt> {
  const slots = await gate.acquire(c.type, c.id, leaseUntil);
  if (!slots) return { outcome: 'limited' };
  const writeId = ctx.newId();
  const e = new Expression()
    .require(stillQueuedAt(c.readySk))
    .require(hasAttemptsLeft)
    .assign({
      status: TaskStatus.RUNNING,
      leaseOwner: workerId,
      leaseUntil,
      startedAt: now,
      updatedAt: now,
      writeId,
      [INDEX.sweep.partition]: leaseSweepPartition(c.shard),
      [INDEX.sweep.sort]: sweepKeyFor(leaseUntil, ctx.config),
      [INDEX.ready.partition]: undefined,
      [INDEX.ready.sort]: undefined,
    })
    .add('leaseToken', 1)
    .add('attempts', 1);
  ctx.onIntent?.('claim', c.id);
  try {
    const out = await ctx.doc.send(
      new UpdateCommand({ TableName: ctx.tableName, Key: taskKey(c.id), ...e.params(), ReturnValues: 'ALL_NEW' }),
      deadline(ctx.config.requestDeadlineMs),
    );
    return { outcome: 'won', claimed: claimedFrom(out.Attributes as TaskItem, slots) };
  } catch (error) {
    if ((isConditionalCheckFailed(error) && wasRetried(error)) || isTransient(error)) {
      // Our write may have applied with only its answer lost (a retried write, or our own deadline).
      const current = await readTaskItem(ctx, c.id, deadline(ctx.config.requestDeadlineMs)).catch(() => undefined);
      if (current?.writeId === writeId) return { outcome: 'won', claimed: claimedFrom(current, slots) };
    }
    await releaseSlots(ctx, workerId, slots);
    if (isConditionalCheckFailed(error)) return { outcome: 'lost' };
    throw error;
  }
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
