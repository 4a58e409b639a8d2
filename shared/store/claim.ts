/**
 * Claim: the DynamoDB stand-in for `FOR UPDATE SKIP LOCKED`. Read a few more ready heads than there
 * are free slots, take them with conditional writes, and skip any another worker won, without waiting.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { fnv1a } from '../ids.js';
import { leaseExpiry, sweepKeyFor } from '../lease-rules.js';
import { INDEX, leaseSweepPartition, readyPartition, SHARD_COUNT, taskIdFromPk, taskKey } from '../table-layout.js';
import { TaskStatus, type Task } from '../task-model.js';
import type { StoreContext } from './context.js';
import { hasAttemptsLeft, stillQueuedAt } from './conditions.js';
import { deadline, isConditionalCheckFailed, isTransient, wasRetried } from './dynamo.js';
import { Expression } from './expression.js';
import { claimInput, parseInput, type ClaimInput, type Lease, type SlotLease } from './inputs.js';
import { releaseSlots, SlotGate } from './slots.js';
import type { RecoveryReport } from './recovery.js';
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
 * Per-worker claim memory. Uncontended, a worker takes heads strictly in order. Once it loses a race
 * it picks at random within the window, and it moves its starting partition to a random other one,
 * so workers that met on a shard spread out instead of colliding round after round.
 */
export class ClaimState {
  round = 0;
  contended = false;
  private quietRounds = 0;
  private offset: number | undefined;

  /** Index of the partition this round starts at, out of `count`. */
  startPartition(workerId: string, count: number): number {
    this.offset ??= fnv1a(workerId);
    return (this.offset + this.round) % count;
  }

  noteRound(lostRaces: number, random: () => number): void {
    this.round++;
    if (lostRaces > 0) {
      this.contended = true;
      this.quietRounds = 0;
      this.offset = Math.floor(random() * 2 ** 31);
    } else if (++this.quietRounds >= 8) {
      this.contended = false;
    }
  }
}

interface Candidate {
  id: string;
  type: string;
  shard: number;
  readySk: string;
}

type Attempt = { outcome: 'won'; claimed: Claimed } | { outcome: 'lost' } | { outcome: 'limited' } | { outcome: 'error'; error: unknown };

export async function claim(
  ctx: StoreContext,
  rawInput: ClaimInput,
  state: ClaimState,
  recoverStranded: (taskId: string, holder: string, onFix: (fix: RecoveryReport['fixes'][number]) => void) => Promise<'lease-valid' | 'done'>,
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

  for (let i = 0; i < partitions.length && result.claimed.length < input.max; i++) {
    const { type, shard } = partitions[i]!;
    if (limitedTypes.has(type)) continue;
    if (!(await gate.mayAdmit(type))) {
      limitedTypes.add(type);
      continue;
    }
    const window = input.max - result.claimed.length + ctx.config.claimWindow - 1;
    const candidates = await readHeads(ctx, type, shard, window);
    result.queries++;
    if (state.contended) shuffle(candidates, ctx.random);
    while (candidates.length > 0 && result.claimed.length < input.max && !limitedTypes.has(type)) {
      const batch = candidates.splice(0, input.max - result.claimed.length);
      const attempts = await Promise.all(batch.map((c) => tryClaim(ctx, c, input.workerId, now, leaseUntil, gate)));
      for (const attempt of attempts) {
        if (attempt.outcome === 'won') result.claimed.push(attempt.claimed);
        else if (attempt.outcome === 'lost') result.lostRaces++;
        else if (attempt.outcome === 'limited') limitedTypes.add(type);
        else errors.push(attempt.error);
      }
      // A failing table (throttling, deadline) stops the round; what was already won is still returned.
      if (errors.length > 0) break;
    }
    if (errors.length > 0) break;
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

async function readHeads(ctx: StoreContext, type: string, shard: number, limit: number): Promise<Candidate[]> {
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
  return (out.Items ?? []).map((item) => ({ id: taskIdFromPk(item.pk as string), type, shard, readySk: item[INDEX.ready.sort] as string }));
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

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
