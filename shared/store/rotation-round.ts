/**
 * One claim round's visit of the rotations (group-rules.ts): the rotation partitions of the types it
 * serves that have grouped tasks or fair shares, each read from this worker's cursor, in waves. A wave
 * reads every partition once (in parallel), then visits the rotations it found, partition by partition
 * in turn, taking each rotation's first untried heads (one for a group, a share of the room for an
 * owner), and moves each cursor past the rotations it visited. A partition read to its end wraps to its
 * start in the next wave. So however deep one rotation is, the next one is a single Query away, and the
 * rotations with work are served in turn across rounds.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { isGroupRotation, pastRotation, rotationOfSortKey } from '../group-rules.js';
import { INDEX, rotationPartitions, shardForId, taskIdFromPk } from '../table-layout.js';
import type { Attempt } from './claim-write.js';
import type { Candidate, ClaimState } from './claim-state.js';
import type { StoreContext } from './context.js';
import { deadline } from './dynamo.js';

/** Waves a round reads at most: a group of `groupConcurrency` n gets up to this many starts a round. */
export const ROTATION_WAVES = 4;

/** One rotation as a read found it: its first heads in claim order. */
interface RotationVisit {
  partition: string;
  rotation: string;
  heads: Candidate[];
  /** The last rotation of a page that read its partition to the end: past it, the cursor wraps. */
  endsPartition: boolean;
}

export interface RotationRoundDeps {
  ctx: StoreContext;
  state: ClaimState;
  /** The served types whose rotations are read (grouped or fair-share ones, not limited this round). */
  types: readonly string[];
  room: () => number;
  open: () => boolean;
  limited: ReadonlySet<string>;
  tried: ReadonlySet<string>;
  /** Claims heads in parallel (claim-round.ts take): one attempt per head, in order. */
  take: (heads: Candidate[]) => Promise<Attempt[]>;
  window: () => number;
}

/** Visits the rotations for up to ROTATION_WAVES waves, while there is room. */
export async function takeRotations(deps: RotationRoundDeps): Promise<void> {
  const { ctx, state } = deps;
  const now = ctx.clock.now();
  let partitions = deps.types
    .filter((type) => !deps.limited.has(type))
    .flatMap((type) => rotationPartitions(type).map((partition) => ({ type, partition })))
    .filter(({ partition }) => !state.isDrained(partition, now, ctx.config.pollIntervalMs));
  for (let wave = 0; wave < ROTATION_WAVES && partitions.length > 0 && deps.open(); wave++) {
    const reads = await Promise.all(partitions.map((p) => readFromCursor(deps, p.type, p.partition)));
    const visits = interleave(reads.map((r) => r.visits));
    await visitInTurn(deps, visits);
    // A partition that gave nothing from its cursor's start is empty: skipped for a poll interval.
    partitions = partitions.filter((p, i) => {
      const read = reads[i]!;
      if (read.visits.length === 0 && read.fromStart) state.noteDrained(p.partition, now);
      return read.visits.length > 0 || !read.fromStart;
    });
  }
}

/**
 * Takes heads rotation by rotation: every rotation gets its first untried head before any gets a
 * second (a group only ever one a visit: its slot decides), and the cursors move past each visited.
 */
async function visitInTurn(deps: RotationRoundDeps, visits: RotationVisit[]): Promise<void> {
  const share = Math.max(1, Math.floor(deps.room() / Math.max(1, visits.length)));
  for (let i = 0; i < visits.length && deps.open();) {
    // As many rotations at once as there is room, each claimed in parallel.
    const batch: { visit: RotationVisit; heads: Candidate[] }[] = [];
    let room = deps.room();
    for (; i < visits.length && room > 0; i++) {
      const visit = visits[i]!;
      deps.state.rotations.set(
        visit.partition,
        visit.endsPartition ? undefined : pastRotation(visit.rotation),
      );
      if (deps.limited.has(visit.heads[0]!.type)) continue;
      // Another place's rotation, not yet its turn: left to that place for now (ClaimState.takesRotationNow).
      const now = deps.ctx.clock.now();
      if (!deps.state.takesRotationNow(visit.rotation, visit.heads[0]!.id, now)) continue;
      const untried = visit.heads.filter((h) => !deps.tried.has(h.id));
      const heads = untried.slice(0, Math.min(room, isGroupRotation(visit.rotation) ? 1 : share));
      if (heads.length === 0) continue;
      batch.push({ visit, heads });
      room -= heads.length;
    }
    if (batch.length > 0) await deps.take(batch.flatMap((b) => b.heads));
  }
}

/** Rotations of several partitions, taken in turn: the first of each, then the second of each, and so on. */
function interleave(lists: RotationVisit[][]): RotationVisit[] {
  const out: RotationVisit[] = [];
  for (let k = 0; lists.some((l) => k < l.length); k++)
    for (const l of lists) if (k < l.length) out.push(l[k]!);
  return out;
}

/**
 * One page of a rotation partition from this worker's cursor (keys only, eventually consistent: the
 * claim write re-checks each head), grouped by rotation. A page past the partition's end wraps: the
 * cursor is cleared, and the next wave reads from the start.
 */
async function readFromCursor(
  deps: RotationRoundDeps,
  type: string,
  partition: string,
): Promise<{ visits: RotationVisit[]; fromStart: boolean }> {
  const { ctx, state } = deps;
  const cursor = state.rotations.get(partition);
  const out = await ctx.doc.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: INDEX.ready.name,
      KeyConditionExpression: cursor === undefined ? '#p = :p' : '#p = :p AND #s > :after',
      ExpressionAttributeNames: {
        '#p': INDEX.ready.partition,
        ...(cursor === undefined ? {} : { '#s': INDEX.ready.sort }),
      },
      ExpressionAttributeValues: { ':p': partition, ...(cursor === undefined ? {} : { ':after': cursor }) },
      Limit: deps.window(),
    }),
    deadline(ctx.config.requestDeadlineMs),
  );
  const visits: RotationVisit[] = [];
  for (const item of out.Items ?? []) {
    const id = taskIdFromPk(item.pk as string);
    const readySk = item[INDEX.ready.sort] as string;
    const rotation = rotationOfSortKey(readySk);
    const head: Candidate = { id, type, shard: shardForId(id), readySk, rotation };
    const last = visits.at(-1);
    if (last?.rotation === rotation) last.heads.push(head);
    else visits.push({ partition, rotation, heads: [head], endsPartition: false });
  }
  // Read to its end: past its last rotation the next wave (or round) starts again from the first.
  if (out.LastEvaluatedKey === undefined) {
    if (visits.length > 0) visits.at(-1)!.endsPartition = true;
    else state.rotations.set(partition, undefined);
  }
  return { visits, fromStart: cursor === undefined };
}
