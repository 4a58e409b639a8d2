/**
 * What a worker's claims remember from one round to the next: whether it is contended, where it
 * starts, heads it read but did not take, and partitions it found empty.
 */
import { fnv1a } from '../ids.js';
import { shardPartition } from '../table-layout.js';

/** A ready head: enough to attempt the claim write without reading the item. */
export interface Candidate {
  id: string;
  type: string;
  shard: number;
  readySk: string;
}

/** What a worker saw in a type's lane at its last read. */
export interface LaneSeen {
  readAt: number;
  /** It held heads above the default priority (or heads below it were being taken): read it every round. */
  waiting: boolean;
  /** It held heads below the default priority (taken once the shards are empty). */
  below: boolean;
}

/** A claim whose outcome was never learned: its write id, and when its lease would run out. */
export interface UnknownClaim {
  candidate: Candidate;
  writeId: string;
  leaseUntil: number;
}

/** Partitions a round reads first on a hint: beyond these, a burst has spread over every shard anyway. */
const MAX_HINTS = 4;

/** Rounds without a lost race after which a worker counts as calm again. */
const CALM_AFTER_ROUNDS = 8;

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
    return this.contended || this.round < CALM_AFTER_ROUNDS;
  }

  /** Index of the partition this round starts at, out of `count`. */
  startPartition(workerId: string, count: number): number {
    this.offset ??= fnv1a(workerId);
    return (this.offset + this.round) % count;
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

  isDrained(partition: string, now: number, maxAgeMs: number): boolean {
    const readAt = this.drained.get(partition);
    if (readAt === undefined) return false;
    if (now - readAt <= maxAgeMs) return true;
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

  /** Partitions where a task was just enqueued: the next round reads them first. */
  private hints: { type: string; shard: number }[] = [];

  /**
   * A task was just enqueued in this partition (the kick that started this invocation says where, or
   * this process wrote it): the next round reads it first, even if it was empty a moment ago.
   */
  lookFirst(type: string, shard: number): void {
    this.drained.delete(shardPartition(type, shard));
    if (this.hints.some((h) => h.type === type && h.shard === shard) || this.hints.length >= MAX_HINTS)
      return;
    this.hints.push({ type, shard });
  }

  takeHints(): { type: string; shard: number }[] {
    const hints = this.hints;
    this.hints = [];
    return hints;
  }

  /** Another worker took one of the spare heads: the rest are likely stale too. */
  dropSpare(): void {
    this.spare.candidates = [];
  }

  noteRound(lostRaces: number, random: () => number): void {
    this.round++;
    if (lostRaces > 0) {
      this.contended = true;
      this.quietRounds = 0;
      this.offset = Math.floor(random() * 2 ** 31);
    } else if (++this.quietRounds >= CALM_AFTER_ROUNDS) {
      this.contended = false;
    }
  }
}
