/**
 * What a worker's claims remember from one round to the next: whether it is contended, where it
 * starts, heads it read but did not take, and partitions it found empty.
 */
import { RotationCursors, type DeferredRotation } from './rotation-cursors.js';
import { fnv1a } from '../ids.js';
import {
  othersHeadDue,
  othersHeadWaitMs,
  ownsHead,
  placedRange,
  rotationRank,
  visitorRank,
  waitsForOthers,
  type ClaimPlace,
  type PlacedShare,
} from './claim-plan.js';
import { SHARD_COUNT, shardForId, shardPartition } from '../table-layout.js';
import type { DueTask } from './delayed-reads.js';
import { TUNING } from '../tuning.js';
import { EVERY_TOKEN, type RateLimit, type TokenShare } from '../rate-rules.js';

/** A head's partition among the types' default-priority shards, as claim-plan.ts counts them. */
const partitionIndex = (head: Candidate, types: readonly string[]) =>
  types.indexOf(head.type) * SHARD_COUNT + head.shard;

/** A ready head: enough to attempt the claim write without reading the item. */
export interface Candidate {
  id: string;
  type: string;
  shard: number;
  readySk: string;
  /** The rotation it waits in (group-rules.ts), read from a rotation partition. */
  rotation?: string;
}

/** What a worker saw in a type's lane at its last read. */
export interface LaneSeen {
  readAt: number;
  /** It held heads above the default priority (or heads below it were being taken): read it every round. */
  waiting: boolean;
  /** It held heads below the default priority (taken once the shards are empty). */
  below: boolean;
}

/**
 * A claim whose outcome was never learned: its write id, when its lease would run out, and what was
 * claimed (a ready head, put back at that head; or a due delayed task by id, put back after a read).
 */
export type UnknownClaim = { writeId: string; leaseUntil: number } & (
  { candidate: Candidate } | { dueTaskId: string }
);

/**
 * Per-worker claim memory. Calm, a worker takes heads strictly in order. Unsure (its first rounds:
 * many workers start at once, a scheduled wave of Lambdas) or contended (it lost a race within its
 * last 8 rounds), it reads a wider window (see claim.ts) and picks at random among
 * heads of equal priority. Contended, it also takes only a share of a partition and moves its
 * starting partition to a random other one after a lost race, so workers that met on a shard spread
 * out instead of colliding round after round.
 */
export class ClaimState {
  round = 0;
  /** Lost a race within the last 8 rounds. */
  contended = false;
  private quietRounds = 0;
  private offset: number | undefined;

  /** Whether this round picks at random within a wide window instead of strictly in order. */
  get randomized(): boolean {
    return this.contended || this.round < TUNING.claim.calmAfterRounds;
  }

  /** Where this worker's rounds start (RunOptions.place); without one, a hash of its id. */
  private place: ClaimPlace | undefined;

  /** Places the worker for its next rounds (a run's place; undefined: none), from its own start again. */
  placeAt(place: ClaimPlace | undefined): void {
    this.place = place;
    this.offset = undefined;
  }

  /**
   * The tokens of a rate limit this worker owns (rate-rules.ts TokenShare): its placed range of them, as
   * of partitions; the others after eight tokens' worth of the interval. Unplaced: every token.
   */
  tokenShare(rate: RateLimit): TokenShare {
    const range = placedRange(this.place, rate.limit);
    if (!range) return EVERY_TOKEN;
    return {
      owns: (i) => i >= range.start && i < range.start + range.size,
      graceMs: (8 * rate.intervalMs) / rate.limit,
    };
  }

  /** Whether a round over `count` partitions reads them in turn from its own (placed) rather than at random. */
  inTurn(count: number): boolean {
    return placedRange(this.place, count) !== undefined;
  }

  /**
   * Index of the partition this round starts at, out of `count`: placed, each partition of its range in
   * turn; otherwise its own (by a hash of its id, moved at random after a lost race), one further each
   * round, so a lone worker still sees every shard.
   */
  startPartition(workerId: string, count: number): number {
    const range = placedRange(this.place, count);
    if (range) return range.start + (this.round % range.size);
    this.offset ??= fnv1a(workerId);
    return (this.offset + this.round) % count;
  }

  /** Heads of other places this worker read and left to them, and when it first saw each. */
  private readonly othersSeen = new Map<string, number>();
  /** The earliest a head deferred this round may be taken (noteRound makes it othersDueAt). */
  private deferringUntil: number | undefined;
  /** When a head of another place left by the last round may be taken: the worker looks again then. */
  othersDueAt: number | undefined;

  /**
   * A partition read's heads, split: this worker's own (all of them unless it leaves other places'
   * heads to them: leavesOthersHeads), and other places' heads that waited long enough for this
   * worker's rank in their line (claim-plan.ts othersHeadDue), lowest rank first; the rest are left.
   */
  sortHeads(
    read: { candidates: Candidate[]; hinted: boolean },
    types: readonly string[],
    now: number,
  ): { own: Candidate[]; others: Candidate[]; deferred: number } {
    const share = this.leavesOthersHeads(types, read.hinted);
    if (!share || !this.place) return { own: read.candidates, others: [], deferred: 0 };
    const own: Candidate[] = [];
    const others: { head: Candidate; rank: number }[] = [];
    let deferred = 0;
    for (const head of read.candidates) {
      if (ownsHead(share, partitionIndex(head, types), head.id)) {
        own.push(head);
        continue;
      }
      const rank = visitorRank(head.id, this.place);
      const firstSeenAt = this.othersSeen.get(head.id) ?? now;
      if (othersHeadDue(firstSeenAt, now, rank)) {
        others.push({ head, rank });
        this.othersSeen.delete(head.id);
        continue;
      }
      if (!this.othersSeen.has(head.id)) this.othersSeen.set(head.id, now);
      deferred++;
      const dueAt = firstSeenAt + othersHeadWaitMs(rank);
      this.deferringUntil = Math.min(this.deferringUntil ?? dueAt, dueAt);
    }
    this.forgetOldestSeen();
    // Lowest rank first: the heads this visitor is first in line for before those it is later for.
    others.sort((a, b) => a.rank - b.rank);
    return { own, others: others.map((o) => o.head), deferred };
  }

  /**
   * Whether this worker takes `rotation` (in `partition`, of `type`) now (rotation-round.ts): an unplaced
   * worker always; a placed one at once when the rotation is its own (a hash of the key names one place,
   * rotationRank 0), and a visitor once it waited its turn in the line of places (othersHeadDue), as
   * with other places' shard heads. So placed workers reading the same rotation page take different
   * rotations instead of racing for the same group slots; one whose place is gone or busy is taken by
   * a visitor within a few steps (rotation-round.ts revisits the deferred ones that came due).
   */
  takesRotationNow(type: string, partition: string, rotation: string, now: number): boolean {
    if (!this.place) return true;
    const rank = rotationRank(rotation, this.place);
    if (rank === 0) return true;
    const firstSeenAt = this.rotations.firstSeen(type, partition, rotation, now);
    if (othersHeadDue(firstSeenAt, now, rank)) {
      this.rotations.forget(partition, rotation);
      return true;
    }
    const dueAt = firstSeenAt + othersHeadWaitMs(rank);
    this.deferringUntil = Math.min(this.deferringUntil ?? dueAt, dueAt);
    return false;
  }

  /** The rotations this worker left to other places that have waited their turn by `now`. */
  dueDeferredRotations(now: number): DeferredRotation[] {
    const place = this.place;
    if (!place) return [];
    return this.rotations
      .deferredRotations()
      .filter((d) => othersHeadDue(d.firstSeenAt, now, rotationRank(d.rotation, place)));
  }

  /**
   * Heads read but not needed that may be tried later as spares: all of them, but for heads left to
   * other places for now (sortHeads).
   */
  sparesOf(heads: Candidate[], types: readonly string[], hinted: boolean): Candidate[] {
    const share = this.leavesOthersHeads(types, hinted);
    return share ? heads.filter((h) => ownsHead(share, partitionIndex(h, types), h.id)) : heads;
  }

  /**
   * This worker's share of the partitions when it leaves other places' heads to them for now: placed
   * among more places than partitions (claim-plan.ts waitsForOthers), on a read not made on a hint
   * (a task enqueued for whoever is fastest) in a round not answering a ring or a safety read.
   */
  private leavesOthersHeads(types: readonly string[], hinted: boolean): PlacedShare | undefined {
    if (hinted || this.everyHeadOwn || !this.waitsForOthers(types)) return undefined;
    return placedRange(this.place, types.length * SHARD_COUNT);
  }

  /** The next round takes other places' heads as its own (noteRound ends it). */
  private everyHeadOwn = false;

  /**
   * The next round answers a sign of new work that the places owning it may not have had (a ring of
   * this worker's seat, its source's safety read): it takes every head it reads, as a hinted read does.
   */
  takeEveryHeadNextRound(): void {
    this.everyHeadOwn = true;
  }

  /** Whether a head is this worker's own (claim-plan.ts ownsHead): always, unplaced. */
  ownsHead(head: Candidate, types: readonly string[]): boolean {
    return ownsHead(
      placedRange(this.place, types.length * SHARD_COUNT),
      partitionIndex(head, types),
      head.id,
    );
  }

  /** Bounded: the oldest entries (their heads long taken by their place) go first. */
  private forgetOldestSeen(): void {
    for (const id of this.othersSeen.keys()) {
      if (this.othersSeen.size <= TUNING.claim.maxOthersSeen) return;
      this.othersSeen.delete(id);
    }
  }

  /** Whether this worker leaves other places' heads to them for a while (claim-plan.ts waitsForOthers). */
  waitsForOthers(types: readonly string[]): boolean {
    return waitsForOthers(this.place, types.length * SHARD_COUNT);
  }

  /** Heads read in an earlier round and not taken yet (keys only), and when they were read. */
  private spare: { candidates: Candidate[]; readAt: number } = { candidates: [], readAt: 0 };

  /**
   * Up to `max` spare heads of these types, if they were read within `maxAgeMs`: a worker whose tasks
   * finish one at a time then claims each next task without a query of its own.
   */
  takeSpare(types: string[], now: number, maxAgeMs: number, max: number): Candidate[] {
    if (now - this.spare.readAt > maxAgeMs) this.spare.candidates = [];
    const wanted = new Set(types);
    const taken: Candidate[] = [];
    this.spare.candidates = this.spare.candidates.filter((c) =>
      taken.length < max && wanted.has(c.type) ? (taken.push(c), false) : true,
    );
    return taken;
  }

  keepSpare(candidates: Candidate[], readAt: number): void {
    this.spare = { candidates, readAt };
  }

  /** Where this worker's visits of the rotations stand (rotation-round.ts). */
  readonly rotations = new RotationCursors();

  /** Partitions (type#shard) whose every head a query returned, and when. */
  private readonly drained = new Map<string, number>();

  /** The partition had no more heads than the query at `readAt` returned: skip it for `maxAgeMs` (one poll). */
  noteDrained(partition: string, readAt: number): void {
    this.drained.set(partition, readAt);
  }

  /** A write through this process readied a task: forget empty partitions and lanes, look again now. */
  forgetDrained(): void {
    this.drained.clear();
    this.lanes.clear();
  }

  /** Per type: when its lane was last read, and whether it held tasks then. */
  private readonly lanes = new Map<string, LaneSeen>();

  lastLaneRead(type: string): LaneSeen | undefined {
    return this.lanes.get(type);
  }

  noteLane(type: string, seen: LaneSeen): void {
    this.lanes.set(type, seen);
  }

  /**
   * How long the worker now waits between idle rounds (its polls backed off: poll-rules.ts). A partition
   * found empty stays empty for at least this long, so a round woken early (a task of its own finished)
   * does not read again every partition its last round found empty.
   */
  idleWaitMs = 0;

  isDrained(partition: string, now: number, maxAgeMs: number): boolean {
    const readAt = this.drained.get(partition);
    if (readAt === undefined) return false;
    if (now - readAt <= Math.max(maxAgeMs, this.idleWaitMs)) return true;
    this.drained.delete(partition);
    return false;
  }

  /**
   * Claims whose outcome nobody could learn (answers and read-backs all failed) and whose undo failed
   * too: the next rounds try the undo again, so such a task is not left RUNNING under a worker that
   * never runs it until recovery (which, on its last attempt, would fail it without its having run).
   */
  private unknownClaims: UnknownClaim[] = [];

  noteUnknownClaim(claim: UnknownClaim): void {
    this.unknownClaims.push(claim);
  }

  takeUnknownClaims(): UnknownClaim[] {
    const all = this.unknownClaims;
    this.unknownClaims = [];
    return all;
  }

  /**
   * Ready tasks known by key (enqueued in this process, or named by the kick that started this run):
   * the round tries each with one conditional write before it reads any partition, and between its
   * reads, so one offered mid-round starts within a read's time, and a lagging index that does not
   * show it yet costs nothing. A stale one (taken by another worker) loses its write like any head.
   */
  private offered: Candidate[] = [];

  offerReady(candidate: Candidate): void {
    if (this.offered.some((c) => c.id === candidate.id)) return;
    this.offered.push(candidate);
    // Bounded: past this the partition reads find them anyway.
    if (this.offered.length > TUNING.claim.maxOffered) this.offered.shift();
  }

  /** Up to `max` offered tasks of these types, oldest offer first. */
  takeOffered(types: readonly string[], max: number): Candidate[] {
    if (this.offered.length === 0 || max <= 0) return [];
    const wanted = new Set(types);
    const taken: Candidate[] = [];
    this.offered = this.offered.filter((c) =>
      taken.length < max && wanted.has(c.type) ? (taken.push(c), false) : true,
    );
    return taken;
  }

  get offeredWaiting(): number {
    return this.offered.length;
  }

  /** Partitions where a task was just enqueued: the next round reads them first. */
  private hints: { type: string; shard: number }[] = [];

  /**
   * A task was just enqueued in this partition (the kick that started this invocation says where, or
   * this process wrote it): the next round reads it first, even if it was empty a moment ago.
   */
  lookFirst(type: string, shard: number): void {
    this.drained.delete(shardPartition(type, shard));
    if (
      this.hints.some((h) => h.type === type && h.shard === shard) ||
      this.hints.length >= TUNING.claim.maxHints
    )
      return;
    this.hints.push({ type, shard });
  }

  takeHints(): { type: string; shard: number }[] {
    const hints = this.hints;
    this.hints = [];
    return hints;
  }

  /**
   * Delayed tasks this worker was told fall due (a burst it was started ahead of, or a burst its own
   * timekeeper found due), by delay shard, each in one order every worker shares (due time, then id):
   * claimed straight from the delay partition once due. A worker works one shard at a time, starting
   * at one of its own; entering a shard it tries one entry first, and it leaves a shard to whoever took
   * an entry it tried there. Two workers on one shard then meet at its head, and one of them moves on
   * after a single failed write instead of racing the other through the whole list.
   *
   * Entries offered as a steal (what a worker that ran out of its own reads again while the burst
   * lasts) are taken from the other end: from the last one due, backwards, so the thief and the shard's
   * owner, who works from the head, meet once in the middle. It starts at the longest list.
   */
  private readonly due = new Map<number, DueTask[]>();
  private readonly dueFromTail = new Set<number>();
  private dueShard: number | undefined;
  /** This worker won in its current shard: it takes as many as it has room for there. */
  private dueShardOwn = false;

  offerDue(entries: readonly DueTask[], random: () => number, options: { steal?: boolean } = {}): void {
    const known = new Set([...this.due.values()].flat().map((d) => d.id));
    const offered = new Set<number>();
    for (const entry of entries) {
      if (known.has(entry.id)) continue;
      known.add(entry.id);
      const shard = shardForId(entry.id);
      offered.add(shard);
      this.due.set(shard, [...(this.due.get(shard) ?? []), entry]);
    }
    for (const list of this.due.values())
      list.sort((a, b) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (options.steal && offered.size > 0) {
      for (const shard of offered) this.dueFromTail.add(shard);
      const longest = Math.max(...[...offered].map((shard) => this.due.get(shard)!.length));
      const candidates = [...offered].filter((shard) => this.due.get(shard)!.length === longest);
      this.dueShard = candidates[Math.floor(random() * candidates.length)]!;
      this.dueShardOwn = false;
    }
    this.dueShard ??= Math.floor(random() * SHARD_COUNT);
  }

  /** Offered entries due by `now` from one shard: this worker's current one, else the next with any due. */
  takeDue(now: number, max: number): DueTask[] {
    for (let i = 0; i < SHARD_COUNT; i++) {
      const shard = ((this.dueShard ?? 0) + i) % SHARD_COUNT;
      const list = this.due.get(shard);
      if (!list || list[0]!.dueAt > now) continue;
      if (shard !== this.dueShard) {
        this.dueShard = shard;
        this.dueShardOwn = false;
      }
      const n = this.dueShardOwn ? max : 1;
      const taken = this.dueFromTail.has(shard)
        ? takeDueFromTail(list, now, n)
        : takeDueFromHead(list, now, n);
      if (list.length === 0) this.forgetDueShard(shard);
      return taken;
    }
    return [];
  }

  private forgetDueShard(shard: number): void {
    this.due.delete(shard);
    this.dueFromTail.delete(shard);
  }

  /** Offered entries not yet tried. */
  get dueWaiting(): number {
    let n = 0;
    for (const list of this.due.values()) n += list.length;
    return n;
  }

  /** The earliest due time among them. */
  get nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const list of this.due.values())
      if (list.length > 0 && (next === undefined || list[0]!.dueAt < next)) next = list[0]!.dueAt;
    return next;
  }

  /** Every entry this worker tried in its shard was its own: it takes as many as it has room for there. */
  noteDueWon(): void {
    this.dueShardOwn = true;
  }

  /** Another worker took an entry this one tried: that shard is left to it (and to the promotion). */
  noteDueLost(): void {
    if (this.dueShard !== undefined) this.forgetDueShard(this.dueShard);
    this.dueShardOwn = false;
  }

  /** Nothing more can be taken this way (no type qualifies): the entries are left to their promotion. */
  dropDue(): void {
    this.due.clear();
    this.dueFromTail.clear();
  }

  /** Another worker took one of the spare heads: the rest are likely stale too. */
  dropSpare(): void {
    this.spare.candidates = [];
  }

  /** Something this round could not take yet may be taken at `at` (a rate limit's next start): look again then. */
  lookAgainBy(at: number | undefined): void {
    if (at === undefined) return;
    this.deferringUntil = this.deferringUntil === undefined ? at : Math.min(this.deferringUntil, at);
  }

  noteRound(lostRaces: number, random: () => number): void {
    this.round++;
    this.othersDueAt = this.deferringUntil;
    this.everyHeadOwn = false;
    this.deferringUntil = undefined;
    if (lostRaces > 0) {
      this.contended = true;
      this.quietRounds = 0;
      this.offset = Math.floor(random() * 2 ** 31);
    } else if (++this.quietRounds >= TUNING.claim.calmAfterRounds) {
      this.contended = false;
    }
  }
}

/** Up to `n` entries due by `now` from the head of a list sorted by due time (the owner's end). */
function takeDueFromHead(list: DueTask[], now: number, n: number): DueTask[] {
  const taken: DueTask[] = [];
  while (list.length > 0 && list[0]!.dueAt <= now && taken.length < n) taken.push(list.shift()!);
  return taken;
}

/** Up to `n` entries due by `now` from the other end: the last due one first, backwards (a thief's end). */
function takeDueFromTail(list: DueTask[], now: number, n: number): DueTask[] {
  const end = list.findLastIndex((d) => d.dueAt <= now) + 1;
  const start = Math.max(0, end - n);
  return list.splice(start, end - start).reverse();
}
