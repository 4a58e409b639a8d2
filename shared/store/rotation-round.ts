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
import {
  groupConcurrencyOf,
  isGroupRotation,
  pastRotation,
  rotationOfSortKey,
  rotationSortKey,
} from '../group-rules.js';
import type { DeferredRotation } from './rotation-cursors.js';
import { INDEX, rotationPartitions, shardForId, taskIdFromPk } from '../table-layout.js';
import type { Attempt } from './claim-write.js';
import type { Candidate, ClaimState } from './claim-state.js';
import type { StoreContext } from './context.js';
import { deadline } from './dynamo.js';

/** Waves a round reads at most: a group of `groupConcurrency` n gets up to this many starts a round. */
export const ROTATION_WAVES = 4;

/** One rotation as a read found it: its first heads in claim order. */
interface RotationVisit {
  type: string;
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
  /** False when a concurrency or rate limit on the type has no room this round (SlotGate.mayAdmit). */
  mayAdmit: (type: string) => Promise<boolean>;
}

/** What one round learned of its rotations. */
interface RoundTurns {
  /**
   * Rotations left for the rest of the round: one whose head was tried and not won (a group's next head
   * must not start before its first, in claim order; a lost race says another worker serves it), and a
   * group whose every slot this round took.
   */
  stalled: Set<string>;
  /** Starts this round won per group. */
  wonByGroup: Map<string, number>;
}

/** Visits the rotations for up to ROTATION_WAVES waves, while there is room. */
export async function takeRotations(deps: RotationRoundDeps): Promise<void> {
  const { ctx, state } = deps;
  const now = ctx.clock.now();
  const round: RoundTurns = { stalled: new Set(), wonByGroup: new Map() };
  const admitted: string[] = [];
  for (const type of deps.types)
    if (!deps.limited.has(type) && (await deps.mayAdmit(type))) admitted.push(type);
  // Rotations left to other places that have waited their turn: read directly, before the cursors.
  const due = state.dueDeferredRotations(now).filter((d) => admitted.includes(d.type));
  if (due.length > 0 && deps.open()) {
    const reads = await Promise.all(due.slice(0, deps.room()).map((d) => readRotation(deps, d)));
    await visitInTurn(deps, reads.flat(), round, false);
  }
  let partitions = admitted
    .flatMap((type) => rotationPartitions(type).map((partition) => ({ type, partition })))
    .filter(({ partition }) => !state.isDrained(partition, now, ctx.config.pollIntervalMs));
  for (let wave = 0; wave < ROTATION_WAVES && partitions.length > 0 && deps.open(); wave++) {
    const reads = await Promise.all(partitions.map((p) => readFromCursor(deps, p.type, p.partition)));
    const visits = interleave(reads.map((r) => r.visits));
    // A wave that tried nothing (every rotation stalled, left to its place, or full) ends the visit.
    if ((await visitInTurn(deps, visits, round, true)) === 0) break;
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
 * second (a group only ever one a visit: its slot decides). With `moveCursors`, each cursor moves past
 * the rotations visited; those not reached (the round ran out of room) are read again next time.
 */
async function visitInTurn(
  deps: RotationRoundDeps,
  visits: RotationVisit[],
  round: RoundTurns,
  moveCursors: boolean,
): Promise<number> {
  let tried = 0;
  // An owner's rotation takes a share of the room only when the pages read showed every rotation after
  // the cursors (each read to its end); otherwise one head a visit, since the next rotation may be one
  // page further, and a deep rotation must not take the room from it.
  const complete =
    visits.length > 0 &&
    visits.every((v, i, all) => v.endsPartition || all.some((w, j) => j > i && w.partition === v.partition));
  const share = complete ? Math.max(1, Math.floor(deps.room() / visits.length)) : 1;
  for (let i = 0; i < visits.length && deps.open();) {
    // As many rotations at once as there is room, each claimed in parallel.
    const batch: { visit: RotationVisit; heads: Candidate[] }[] = [];
    let room = deps.room();
    for (; i < visits.length && room > 0; i++) {
      const visit = visits[i]!;
      if (moveCursors)
        deps.state.rotations.set(
          visit.partition,
          visit.endsPartition ? undefined : pastRotation(visit.rotation),
        );
      if (round.stalled.has(visit.rotation)) continue;
      // Another place's rotation, not yet its turn: left to that place for now (ClaimState.takesRotationNow).
      const now = deps.ctx.clock.now();
      if (!deps.state.takesRotationNow(visit.type, visit.partition, visit.rotation, now)) continue;
      const untried = visit.heads.filter((h) => !deps.tried.has(h.id));
      const heads = untried.slice(0, Math.min(room, isGroupRotation(visit.rotation) ? 1 : share));
      if (heads.length === 0) continue;
      batch.push({ visit, heads });
      room -= heads.length;
    }
    if (batch.length === 0) continue;
    const attempts = await deps.take(batch.flatMap((b) => b.heads));
    tried += attempts.length;
    let at = 0;
    for (const { visit, heads } of batch) {
      const outcomes = attempts.slice(at, (at += heads.length));
      if (outcomes.some((a) => a.outcome !== 'won')) {
        round.stalled.add(visit.rotation);
        continue;
      }
      // A group whose every slot this round took is not tried again this round.
      if (!isGroupRotation(visit.rotation)) continue;
      const won = (round.wonByGroup.get(visit.rotation) ?? 0) + outcomes.length;
      round.wonByGroup.set(visit.rotation, won);
      if (won >= groupConcurrencyOf(deps.ctx.typeGrouping, visit.type)) round.stalled.add(visit.rotation);
    }
  }
  return tried;
}

/** The first heads of one rotation left to another place (begins_with its key): none when it emptied. */
async function readRotation(deps: RotationRoundDeps, d: DeferredRotation): Promise<RotationVisit[]> {
  const out = await deps.ctx.doc.send(
    new QueryCommand({
      TableName: deps.ctx.tableName,
      IndexName: INDEX.ready.name,
      KeyConditionExpression: '#p = :p AND begins_with(#s, :r)',
      ExpressionAttributeNames: { '#p': INDEX.ready.partition, '#s': INDEX.ready.sort },
      ExpressionAttributeValues: { ':p': d.partition, ':r': rotationSortKey(d.rotation, '') },
      Limit: deps.window(),
    }),
    deadline(deps.ctx.config.requestDeadlineMs),
  );
  const heads = (out.Items ?? []).map((item) => headOf(item, d.type, d.rotation));
  if (heads.length === 0) deps.state.rotations.forget(d.partition, d.rotation);
  return heads.length === 0
    ? []
    : [{ type: d.type, partition: d.partition, rotation: d.rotation, heads, endsPartition: false }];
}

/** A ready entry of a rotation partition as a claim candidate. */
function headOf(item: Record<string, unknown>, type: string, rotation: string): Candidate {
  const id = taskIdFromPk(item.pk as string);
  return { id, type, shard: shardForId(id), readySk: item[INDEX.ready.sort] as string, rotation };
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
    const rotation = rotationOfSortKey(item[INDEX.ready.sort] as string);
    const head = headOf(item, type, rotation);
    const last = visits.at(-1);
    if (last?.rotation === rotation) last.heads.push(head);
    else visits.push({ type, partition, rotation, heads: [head], endsPartition: false });
  }
  if (out.LastEvaluatedKey !== undefined) return { visits, fromStart: cursor === undefined };
  // Read to its end: past its last rotation the next read starts again from the first; nothing past
  // the cursor wraps at once (the rotations before it are read in this same wave).
  if (visits.length > 0) visits.at(-1)!.endsPartition = true;
  else state.rotations.set(partition, undefined);
  if (visits.length === 0 && cursor !== undefined) return readFromCursor(deps, type, partition);
  return { visits, fromStart: cursor === undefined };
}
