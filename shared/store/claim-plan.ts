/**
 * The claim round's decisions, apart from its I/O: which steps it takes in what order and when it
 * ends (roundSteps), how many heads a read asks for, which partitions it visits and in what waves,
 * how contended workers spread over the heads they all see, and when the work below the default
 * priority may be taken. No reads, no writes, no clock: claim-round.ts performs
 * what these decide, and test/claim-plan.test.ts checks them as properties.
 */
import { fnv1a, shuffleInPlace } from '../ids.js';
import { readyPriorityPrefix, SHARD_COUNT } from '../table-layout.js';
import { TUNING } from '../tuning.js';

/**
 * A step of a claim round (claim-round.ts performs each):
 * - `undoUnknown`: claims of earlier rounds whose outcome was never learned, undone first;
 * - `offered`: ready tasks handed over by key (an enqueue in this process, a kick), one write each;
 * - `lanesAbove`: the lanes above the default priority, highest first;
 * - `dueDirect`: delayed tasks offered as due (a burst), claimed from their delay partition;
 * - `spare`: heads of the default priority the last round read and did not need;
 * - `rotations`: grouped tasks and fair-share types' tasks, rotation by rotation (rotation-round.ts);
 * - `shards`: the default-priority shards, in waves;
 * - `belowDefault`: the lanes below the default, once no default-priority task waits.
 */
export type RoundStepName =
  'undoUnknown' | 'offered' | 'lanesAbove' | 'dueDirect' | 'spare' | 'rotations' | 'shards' | 'belowDefault';

/**
 * When a step ends the round:
 * - `won`: it won a task (offered tasks start at once; the worker's next round reads on);
 * - `dueWaiting`: offered due tasks still wait (the ready partitions, most of them empty in a burst,
 *   are read once that list is done);
 * - `endedEarly`: the shards' hinted wave won (those tasks start now), or offers arrived between waves;
 * - `never`.
 */
export type RoundEnd = 'won' | 'dueWaiting' | 'endedEarly' | 'never';

export interface RoundStep {
  step: RoundStepName;
  endsRound: RoundEnd;
}

/** What a performed step reports, for its end rule. */
export interface StepOutcome {
  won: number;
  endedEarly?: boolean;
}

/**
 * The round's steps, in claim order: above the default priority before it, the default before below
 * it; what is known by key before what must be read. A kick's run (`handedFirst`) takes what it was
 * handed before it reads a lane (a task above the default was kicked for on its own, to an invocation
 * that reads the lanes first). A randomized (contended) round tries no spare heads: others read them
 * too, so they are likely taken.
 */
export function roundSteps(options: {
  handedFirst: boolean;
  randomized: boolean;
  /** The rotations go before the shards this round (every other round: rotation-round.ts). */
  rotationsFirst?: boolean;
}): RoundStep[] {
  const rotations = { step: 'rotations', endsRound: 'never' } as const;
  return [
    { step: 'undoUnknown', endsRound: 'never' },
    ...(options.handedFirst ? [{ step: 'offered', endsRound: 'won' } as const] : []),
    { step: 'lanesAbove', endsRound: 'never' },
    { step: 'offered', endsRound: 'won' },
    { step: 'dueDirect', endsRound: 'dueWaiting' },
    ...(options.randomized ? [] : [{ step: 'spare', endsRound: 'never' } as const]),
    ...(options.rotationsFirst === true ? [rotations] : []),
    { step: 'shards', endsRound: 'endedEarly' },
    ...(options.rotationsFirst === true ? [] : [rotations]),
    { step: 'belowDefault', endsRound: 'never' },
  ];
}

/** Whether the round ends after a step, by its rule, what it did, and the offered due tasks still waiting. */
export function endsRoundAfter(rule: RoundEnd, outcome: StepOutcome, dueWaiting: number): boolean {
  if (rule === 'won') return outcome.won > 0;
  if (rule === 'dueWaiting') return dueWaiting > 0;
  if (rule === 'endedEarly') return outcome.endedEarly === true;
  return false;
}

/** A partition of the ready index: one shard of one type's default-priority tasks. */
export interface ShardRef {
  type: string;
  shard: number;
}

/**
 * Heads one read asks for: the room left plus the configured spare (`claimWindow` - 1), widened when
 * the worker picks at random (contended or just started: others read the same heads), within bounds.
 */
export function readWindow(room: number, claimWindow: number, randomized: boolean): number {
  const wanted = (room + claimWindow - 1) * (randomized ? TUNING.claim.contendedWindowFactor : 1);
  return Math.min(TUNING.claim.maxWindow, Math.max(TUNING.claim.minWindow, wanted));
}

/** Where a worker's rounds start: its place among the workers running now (e.g. its fleet seat of the cap). */
export interface ClaimPlace {
  index: number;
  of: number;
}

/**
 * What a placed worker has to itself out of `count` partitions: a range of them, from its start up to
 * the next place's, and when there are more places than partitions (32 workers on 16 shards) the one
 * partition its place falls in, shared with the places beside it, each taking its `slice` of the heads
 * (by a hash of the task id, ownsHead). Its rounds start at each partition of its range in turn (a
 * backlog is taken from every one alike).
 */
export interface PlacedShare {
  start: number;
  size: number;
  /** How many places share these partitions (1 when there are no more places than partitions). */
  sharers: number;
  /** This place's slice of their heads, 0 to sharers - 1. */
  slice: number;
}

/** The share (see PlacedShare) of the worker at `place` among `count` partitions; none unplaced. */
export function placedRange(place: ClaimPlace | undefined, count: number): PlacedShare | undefined {
  if (!place || count < 1) return undefined;
  const of = Math.max(1, place.of);
  const index = ((place.index % of) + of) % of;
  if (of <= count) {
    const at = (i: number) => Math.floor((i * count) / of);
    return { start: at(index), size: at(index + 1) - at(index), sharers: 1, slice: 0 };
  }
  // Partition p is shared by the places i with floor(i * count / of) = p: from firstPlace(p) up to firstPlace(p + 1).
  const start = Math.floor((index * count) / of);
  const firstPlace = (p: number) => Math.ceil((p * of) / count);
  return {
    start,
    size: 1,
    sharers: firstPlace(start + 1) - firstPlace(start),
    slice: index - firstPlace(start),
  };
}

/**
 * A task id's hash for dividing one partition's heads: the bits its shard did not use (the shard is
 * the id's hash modulo SHARD_COUNT, so every head of a shard has the same low bits).
 */
const headHash = (id: string) => Math.floor(fnv1a(id) / SHARD_COUNT);

/**
 * Whether a head (task `id` in the partition at `partitionIndex`) is the placed worker's own: in its
 * range, and in its slice when places share the partition. An unplaced worker owns every head.
 */
export function ownsHead(share: PlacedShare | undefined, partitionIndex: number, id: string): boolean {
  if (!share) return true;
  const inRange = partitionIndex >= share.start && partitionIndex < share.start + share.size;
  return inRange && (share.sharers === 1 || headHash(id) % share.sharers === share.slice);
}

/**
 * Where a visitor stands in the line of places for a head of another place: 0 for the place its id
 * hashes to, 1 for the next place, and so on. Each rank is one place's, so visitors of one busy
 * place's partition take its heads one at a time, each head first offered to one of them.
 */
export function visitorRank(id: string, place: ClaimPlace): number {
  const of = Math.max(1, place.of);
  return (((place.index - headHash(id)) % of) + of) % of;
}

/** A visitor's place in the line for a rotation (rotation-round.ts), as visitorRank is for a head: 0 for the place its key hashes to. */
export function rotationRank(rotation: string, place: ClaimPlace): number {
  const of = Math.max(1, place.of);
  return (((place.index - fnv1a(`rotation#${rotation}`)) % of) + of) % of;
}

/**
 * Whether a worker at `place` leaves other places' heads to them for a while (othersHeadWaitMs): only
 * when places outnumber the `count` partitions. Then every partition has workers of its own (its
 * sharers), which take its heads as they come, and a visitor that takes them too mostly races them
 * (the contention benchmark, 32 workers on 16 shards: 0.10-0.13 lost races per claim taking at once,
 * 0.005-0.012 waiting in line). With fewer places, a partition's one owner may have every slot full
 * (a burst of long tasks) and its heads wait for visitors: waiting there put the burst benchmark's
 * last start about a second later, so visitors take at once.
 */
export function waitsForOthers(place: ClaimPlace | undefined, count: number): boolean {
  return place !== undefined && place.of > count;
}

/**
 * How old a round's spare heads may be when the next round tries them: a poll, or, for a worker whose
 * visitors wait their turn for its heads (waitsForOthers), less than the first turn, so its spares are
 * not heads a visitor already counts as left.
 */
export function spareMaxAgeMs(pollMs: number, othersWait: boolean): number {
  return othersWait ? Math.min(pollMs, TUNING.claim.othersHeadStepMs / 2) : pollMs;
}

/**
 * How long a head of another place is left to that place's worker (which takes its own heads at once,
 * in order) before a visitor at `rank` (visitorRank) takes it: a step more for each rank, so the
 * first visitor in line with room takes it, and two rarely go for the same head. An owner with room
 * takes its heads within a step; one that leaves them longer is busy (its slots full), or gone.
 * Visitors that took every head they read (a drain's thin tail: a few heads each, every idle worker
 * reading every partition) lost more races than they won. The line ends after a few ranks: a fleet
 * holding few of its seats has no visitor at most ranks, and a head must not wait for a line of
 * places nobody holds (past it, every visitor takes it at once).
 */
export function othersHeadWaitMs(rank: number): number {
  return Math.min(rank + 1, TUNING.claim.othersHeadMaxSteps) * TUNING.claim.othersHeadStepMs;
}

/** Whether a head of another place, first seen at `firstSeenAt`, has waited long enough for this visitor. */
export function othersHeadDue(firstSeenAt: number, now: number, rank: number): boolean {
  return now - firstSeenAt >= othersHeadWaitMs(rank);
}

/**
 * The partitions a round visits: where a task was just enqueued first (the hints: one query finds what
 * a kick was for), then the worker's own partition (moving on by one each round so a lone worker still
 * sees every shard), then the rest. A placed worker (`inTurn`) reads them in turn from its own: the
 * ones up to the next place's are nobody else's first, so workers started together (a burst, a
 * scale-up) read different heads. Otherwise in random order: workers whose own partition runs dry
 * scatter instead of all moving to the same neighbour.
 */
export function visitOrder(
  types: readonly string[],
  hints: readonly ShardRef[],
  startPartition: (count: number) => number,
  random: () => number,
  inTurn: (count: number) => boolean = () => false,
): ShardRef[] {
  const all = types.flatMap((type) => Array.from({ length: SHARD_COUNT }, (_, shard) => ({ type, shard })));
  const count = all.length;
  const start = startPartition(count);
  const [own] = all.splice(start, 1);
  if (inTurn(count)) all.push(...all.splice(0, start));
  else shuffleInPlace(all, random);
  const isHint = (p: ShardRef) => hints.some((h) => h.type === p.type && h.shard === p.shard);
  return [...hints, ...[own!, ...all].filter((p) => !isHint(p))];
}

/**
 * How many partitions wave `w` reads at once. The hinted partitions (read at the round's start) are a
 * wave of their own; then waves grow (1, 1, 2, 4, then 8 at a time), so a worker with plenty of work
 * reads only its own partition, and one looking for the single task a kick was for finds it within a
 * few round trips, not after up to 16 x types sequential queries.
 */
export function waveSize(w: number, hintCount: number): number {
  const waves = hintCount > 0 ? [hintCount, ...TUNING.claim.readWaves] : TUNING.claim.readWaves;
  return waves[w] ?? TUNING.claim.laterWave;
}

/**
 * How many of a read's heads a randomized round tries: contended, a share of what is there (all that
 * is needed when the partition is full, a few when it runs thin), so workers that read the same heads
 * move on instead of retrying them; otherwise all of them. Never more than the room left.
 */
export function headsToTry(read: number, room: number, contended: boolean): number {
  const share = contended ? Math.ceil(read / TUNING.claim.contendedWindowFactor) : read;
  return Math.max(0, Math.min(share, room));
}

/**
 * Work below the default priority is taken only once no default-priority task of a served type
 * waits: every partition the round visits is empty (or its type may take nothing now).
 */
export function defaultsEmpty(partitions: readonly ShardRef[], isEmpty: (p: ShardRef) => boolean): boolean {
  return partitions.every(isEmpty);
}

/**
 * Random order among heads of equal priority; a higher priority still comes first (the query returned
 * them sorted). Contended workers that read the same heads then try different ones.
 */
export function shuffleWithinPriority<T extends { readySk: string }>(heads: T[], random: () => number): void {
  const groups: T[][] = [];
  for (const h of heads) {
    const last = groups.at(-1);
    if (last && readyPriorityPrefix(last[0]!.readySk) === readyPriorityPrefix(h.readySk)) last.push(h);
    else groups.push([h]);
  }
  for (const group of groups) shuffleInPlace(group, random);
  heads.splice(0, heads.length, ...groups.flat());
}
