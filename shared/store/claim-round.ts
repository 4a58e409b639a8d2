/**
 * One claim round, performed: the steps the plan (claim-plan.ts roundSteps) lists, in claim order, each
 * one method here doing its reads and conditional writes, until a step's end rule ends the round. Work
 * handed by key, the lanes above the default priority, offered due delayed tasks, the spare heads of
 * the last round, the shards in waves, and last the work below the default priority. A failing request
 * ends the round; what was already won is still returned.
 */
import { leaseExpiry } from '../lease-rules.js';
import { shardPartition } from '../table-layout.js';
import { TUNING } from '../tuning.js';
import type { StoreContext } from './context.js';
import type { ClaimInput } from '../task-inputs.js';
import type { Candidate, ClaimState, UnknownClaim } from './claim-state.js';
import { LaneRound } from './claim-lanes.js';
import {
  defaultsEmpty,
  endsRoundAfter,
  headsToTry,
  roundSteps,
  readWindow,
  shuffleWithinPriority,
  spareMaxAgeMs,
  visitOrder,
  waveSize,
  type RoundStepName,
  type ShardRef,
  type StepOutcome,
} from './claim-plan.js';
import { claimOne, dueClaim, headClaim, undoClaim, type Attempt, type Claimed } from './claim-write.js';
import { readHeads } from './ready-heads.js';
import { SlotGate, startsAreGated } from './slots.js';
import { takeRotations } from './rotation-round.js';

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

/** A partition's heads as one read returned them. */
interface PartitionRead {
  type: string;
  /** Read on a hint (a task just enqueued there for whoever is fastest): every head is this worker's. */
  hinted: boolean;
  partition: string;
  now: number;
  candidates: Candidate[];
  exhausted: boolean;
}

/** The round's visit of the default-priority shards: in what order, the hinted reads under way, which it found empty. */
interface ShardVisit {
  partitions: ShardRef[];
  hintCount: number;
  hinted: Promise<(PartitionRead | undefined)[]> | undefined;
  /** Partitions read to their end and taken: below-default work waits for all to be. */
  empty: Set<string>;
}

/** Heads read but not needed this round, kept for the next (as old as the oldest read they came from). */
class SpareHeads {
  readonly heads: Candidate[] = [];
  readAt = Number.POSITIVE_INFINITY;
  keep(heads: Candidate[], readAt: number): void {
    if (heads.length === 0) return;
    this.heads.push(...heads);
    this.readAt = Math.min(this.readAt, readAt);
  }
}

export class ClaimRound {
  readonly result: ClaimResult = { claimed: [], lostRaces: 0 };
  private readonly gate: SlotGate;
  private readonly lanes: LaneRound;
  /** Types that may take nothing more this round (a concurrency limit is full). */
  private readonly limitedTypes = new Set<string>();
  private readonly errors: unknown[] = [];
  /** Heads this round already tried (a spare may also come back in a partition read): never twice. */
  private readonly tried = new Set<string>();
  /** Wins of tasks offered by key (see `end`). */
  private wonByKey = 0;
  private readonly onUnknown = (unknown: UnknownClaim) => this.state.noteUnknownClaim(unknown);

  constructor(
    private readonly ctx: StoreContext,
    private readonly input: ClaimInput,
    private readonly state: ClaimState,
  ) {
    this.gate = new SlotGate(ctx, input.workerId, (rate) => state.tokenShare(rate));
    this.lanes = new LaneRound(ctx, state, input.types);
  }

  /** Performs the plan's steps (claim-plan.ts roundSteps) until one ends the round. */
  async run(): Promise<ClaimResult> {
    const hints = this.state.takeHints().filter((h) => this.input.types.includes(h.type));
    const partitions = visitOrder(
      this.input.types,
      hints,
      (count) => this.state.startPartition(this.input.workerId, count),
      this.ctx.random,
      (count) => this.state.inTurn(count),
    );
    // A partition named by a hint is read at once, beside the lanes: the task a kick was sent for is
    // then found in one round trip. (Its heads are re-checked by the claim write like any other.)
    const shards: ShardVisit = {
      partitions,
      hintCount: hints.length,
      hinted:
        hints.length > 0
          ? Promise.all(partitions.slice(0, hints.length).map((p) => this.readPartition(p, true)))
          : undefined,
      empty: new Set<string>(),
    };
    const plan = roundSteps({
      handedFirst: this.input.handedFirst === true,
      randomized: this.state.randomized,
      rotationsFirst: this.state.rotations.nextRoundFirst(),
    });
    for (const { step, endsRound } of plan) {
      const outcome = await this.perform(step, shards);
      if (endsRoundAfter(endsRound, outcome, this.state.dueWaiting)) break;
    }
    return this.end();
  }

  /** One step of the plan, and what it won. */
  private async perform(step: RoundStepName, shards: ShardVisit): Promise<StepOutcome> {
    const before = this.result.claimed.length;
    let endedEarly = false;
    switch (step) {
      case 'undoUnknown':
        await this.undoUnknownClaims();
        break;
      case 'offered':
        await this.takeOffered();
        break;
      case 'lanesAbove':
        await this.takeLanesAbove();
        break;
      case 'dueDirect':
        await this.takeDueDirect();
        break;
      case 'spare':
        await this.takeSpare();
        break;
      case 'rotations':
        await this.takeRotations();
        break;
      case 'shards':
        endedEarly = await this.takeShards(shards);
        break;
      case 'belowDefault':
        await this.takeBelowDefault(shards);
        break;
    }
    return { won: this.result.claimed.length - before, endedEarly };
  }

  private get room(): number {
    return this.input.max - this.result.claimed.length;
  }

  /** Room left and no request failed: the round goes on. */
  private get open(): boolean {
    return this.room > 0 && this.errors.length === 0;
  }

  private window(): number {
    return readWindow(this.room, this.ctx.config.claimWindow, this.state.randomized);
  }

  /** Runs a step; a failure (throttling, a deadline) is kept and ends the round. */
  private async guard<T>(step: () => Promise<T>): Promise<T | undefined> {
    try {
      return await step();
    } catch (error) {
      this.errors.push(error);
      return undefined;
    }
  }

  /**
   * Ends the round. One that won nothing and fixed nothing reports its failure; one that did either
   * returns it. A round whose every win was handed to it by key found no other work in what it read,
   * and says so (handedOnly: the worker keeps its idle pace instead of reading every partition again).
   */
  private end(): ClaimResult {
    const { result, errors } = this;
    // A rate-limited type that ran out of starts is looked at again when its next start frees.
    this.state.lookAgainBy(this.gate.rates.nextFreeAt);
    this.state.noteRound(result.lostRaces, this.ctx.random);
    if (errors.length > 0 && result.claimed.length === 0 && this.gate.recovered === 0) throw errors[0];
    return result.claimed.length > 0 && this.wonByKey === result.claimed.length
      ? { ...result, handedOnly: true }
      : result;
  }

  /**
   * Claims of earlier rounds whose outcome was never learned: undone before anything else. Once such
   * a claim's lease would have run out, recovery owns the task: it is dropped from the list.
   */
  private async undoUnknownClaims(): Promise<void> {
    const startedAt = this.ctx.clock.now();
    await Promise.all(
      this.state
        .takeUnknownClaims()
        .filter((unknown) => unknown.leaseUntil > startedAt)
        .map((unknown) =>
          undoClaim(this.ctx, unknown, { resends: 0 }).catch(() => this.state.noteUnknownClaim(unknown)),
        ),
    );
  }

  /** Tries heads not tried yet this round, in parallel; each batch's lease runs from its own send time. */
  private async take(fresh: Candidate[]): Promise<Attempt[]> {
    const batch = fresh.filter((c) => !this.tried.has(c.id));
    for (const c of batch) this.tried.add(c.id);
    const now = this.ctx.clock.now();
    const leaseUntil = leaseExpiry(now, this.ctx.config);
    const attempts = await Promise.all(
      batch.map((c) =>
        claimOne(
          this.ctx,
          headClaim(c, this.input.workerId, now, leaseUntil, this.ctx.config),
          leaseUntil,
          this.gate,
          this.onUnknown,
        ),
      ),
    );
    this.tally(
      attempts,
      batch.map((c) => c.type),
    );
    return attempts;
  }

  /** Counts a batch's attempts; `types[j]` is the type of attempt j when known (a limited one is skipped after). */
  private tally(attempts: Attempt[], types: (string | undefined)[]): void {
    for (const [j, attempt] of attempts.entries()) {
      if (attempt.outcome === 'won') this.result.claimed.push(attempt.claimed);
      else if (attempt.outcome === 'lost') this.result.lostRaces++;
      else if (attempt.outcome === 'limited' && types[j] !== undefined) this.limitedTypes.add(types[j]);
      else if (attempt.outcome === 'error') this.errors.push(attempt.error);
    }
  }

  /** Takes heads in the given order, as many at a time as there is room, skipping limited types. */
  private async takeInOrder(heads: Candidate[]): Promise<void> {
    let pending = heads;
    while (this.open) {
      pending = pending.filter((c) => !this.limitedTypes.has(c.type));
      if (pending.length === 0) return;
      await this.take(pending.splice(0, this.room));
    }
  }

  /**
   * Ready tasks offered by key (an enqueue in this process, the kick that started this run): one write
   * each, no read. Whether any was won (the round then returns, so they start now).
   */
  private async takeOffered(): Promise<boolean> {
    if (!this.open) return false;
    const offered = this.state.takeOffered(this.input.types, this.room);
    if (offered.length === 0) return false;
    const won = (await this.take(offered)).filter((a) => a.outcome === 'won').length;
    this.wonByKey += won;
    return won > 0;
  }

  /** `lanesAbove`: tasks above the default priority, of every type served, highest first (the lanes). */
  private async takeLanesAbove(): Promise<void> {
    await this.guard(async () => {
      while (this.open) {
        const { takeable, readMore } = await this.lanes.aboveDefault(this.window(), this.limitedTypes);
        // Contended, workers that read the same lane pick at random among heads of equal priority.
        if (this.state.randomized) shuffleWithinPriority(takeable, this.ctx.random);
        if (takeable.length > 0) await this.takeInOrder(takeable);
        else if (readMore === undefined) return;
      }
    });
  }

  /**
   * `dueDirect`: delayed tasks this worker was told fall due (a burst it was started ahead of), once due: claimed
   * straight from their delay partition, at the default priority only (every head above it was just
   * taken), by types it may take without a concurrency slot. No promotion write, no ready read.
   */
  private async takeDueDirect(): Promise<void> {
    if (!this.open || this.state.dueWaiting === 0) return;
    const { ctx, input } = this;
    const direct = input.types.filter((type) => !startsAreGated(ctx, type));
    if (direct.length === 0 || direct.length > TUNING.claim.maxInValues) this.state.dropDue();
    while (this.open) {
      const due = this.state.takeDue(ctx.clock.now(), this.room);
      if (due.length === 0) return;
      const now = ctx.clock.now();
      const leaseUntil = leaseExpiry(now, ctx.config);
      const attempts = await Promise.all(
        due.map((d) =>
          claimOne(
            ctx,
            dueClaim(d.id, direct, input.workerId, now, leaseUntil, ctx.config),
            leaseUntil,
            this.gate,
            this.onUnknown,
          ),
        ),
      );
      this.tally(attempts, []);
      // Another worker took one: this shard is left to it. Otherwise this worker owns the shard for now.
      if (attempts.some((a) => a.outcome === 'lost')) this.state.noteDueLost();
      else this.state.noteDueWon();
    }
  }

  /**
   * `rotations`: grouped tasks, and the tasks of types with fair shares, rotation by rotation
   * (rotation-round.ts). Only the types known to have grouped tasks or declared with fair shares: a
   * deployment without either reads nothing here.
   */
  private async takeRotations(): Promise<void> {
    const { fairShares } = this.ctx.typeGrouping;
    const grouped = new Set(this.input.groupedTypes ?? []);
    const types = this.input.types.filter((type) => grouped.has(type) || fairShares.includes(type));
    if (types.length === 0 || !this.open) return;
    await this.guard(() =>
      takeRotations({
        ctx: this.ctx,
        state: this.state,
        types,
        room: () => this.room,
        open: () => this.open,
        limited: this.limitedTypes,
        tried: this.tried,
        take: (heads) => this.take(heads),
        window: () => this.window(),
        // A type whose concurrency or rate limit is full this round: no group slot taken for nothing.
        mayAdmit: async (type) => {
          const admitted = await this.gate.mayAdmit(type);
          if (!admitted) this.limitedTypes.add(type);
          return admitted;
        },
      }),
    );
  }

  /** `spare`: heads of the default priority left over from the last round (calm only: contended, they are likely taken). */
  private async takeSpare(): Promise<void> {
    if (!this.open || this.state.randomized) return;
    const spare = this.state.takeSpare(
      this.input.types,
      this.ctx.clock.now(),
      spareMaxAgeMs(this.ctx.config.pollIntervalMs, this.state.waitsForOthers(this.input.types)),
      this.room,
    );
    if (spare.length > 0 && (await this.take(spare)).some((a) => a.outcome === 'lost'))
      this.state.dropSpare();
  }

  /** One partition's heads, unless its type may take nothing now or it was found empty within a poll. */
  private async readPartition({ type, shard }: ShardRef, hinted = false): Promise<PartitionRead | undefined> {
    const partition = shardPartition(type, shard);
    const now = this.ctx.clock.now();
    if (this.limitedTypes.has(type) || this.state.isDrained(partition, now, this.ctx.config.pollIntervalMs))
      return undefined;
    const admitted = await this.guard(() => this.gate.mayAdmit(type));
    if (admitted === undefined) return undefined;
    if (!admitted) {
      this.limitedTypes.add(type);
      return undefined;
    }
    const heads = await this.guard(() => readHeads(this.ctx, partition, type, shard, this.window()));
    return heads ? { type, hinted, partition, now, ...heads } : undefined;
  }

  /**
   * `shards`: the default-priority shards, in waves (claim-plan.ts waveSize). Offers that arrive during the reads are taken
   * between waves, and a round that won in the hinted wave returns at once: those tasks start now, and
   * the worker's next round reads on for the room left.
   */
  private async takeShards({ partitions, hinted, hintCount, empty }: ShardVisit): Promise<boolean> {
    const spares = new SpareHeads();
    let endedEarly = false;
    for (let w = 0, from = 0; from < partitions.length && this.open; w++) {
      if (w > 0 && (await this.takeOffered())) {
        endedEarly = true;
        break;
      }
      const wave = partitions.slice(from, (from += waveSize(w, hintCount)));
      const reads =
        w === 0 && hinted ? await hinted : await Promise.all(wave.map((p) => this.readPartition(p)));
      for (const read of reads) if (read) await this.takeFromRead(read, spares, empty);
      if (w === 0 && hinted && this.result.claimed.length > 0) {
        endedEarly = true;
        break;
      }
    }
    if (!this.state.randomized && spares.heads.length > 0 && this.errors.length === 0)
      this.state.keepSpare(spares.heads.slice(0, TUNING.claim.maxWindow), spares.readAt);
    return endedEarly;
  }

  /**
   * Takes what one partition read holds: its own heads (claim-state.ts sortHeads), then other places'
   * heads whose turn came; its own left over are spares. A partition read to its end, with every head
   * taken (won or lost) and none left to another place, is empty.
   */
  private async takeFromRead(read: PartitionRead, spares: SpareHeads, empty: Set<string>): Promise<void> {
    const { type, partition, now, exhausted } = read;
    const usable = () => this.errors.length === 0 && !this.limitedTypes.has(type);
    if (!this.open || !usable()) {
      // Read in this wave but not needed: kept as spares for the next rounds.
      spares.keep(this.state.sparesOf(read.candidates, this.input.types, read.hinted), now);
      return;
    }
    const { own, others, deferred } = this.state.sortHeads(read, this.input.types, now);
    if (this.state.randomized) {
      // The others that read this partition see the same heads: pick at random, and take a share.
      shuffleWithinPriority(own, this.ctx.random);
      await this.take(own.splice(0, headsToTry(own.length, this.room, this.state.contended)));
    } else {
      while (own.length > 0 && this.open && usable()) await this.take(own.splice(0, this.room));
      if (usable()) spares.keep(own, now);
    }
    // A busy place's heads that reached this visitor's turn (claim-plan.ts othersHeadWaitMs).
    if (others.length > 0 && this.open && usable()) await this.take(others.splice(0, this.room));
    // Every head the partition held was read and taken (won or lost to another): it is empty for now.
    const left = own.length + others.length + deferred;
    if (exhausted && left === 0 && usable()) {
      this.state.noteDrained(partition, now);
      empty.add(partition);
    }
  }

  /** `belowDefault`: the lanes below the default priority, only once no default-priority task of a type served waits. */
  private async takeBelowDefault({ partitions, empty }: ShardVisit): Promise<void> {
    if (!this.open || !this.lanes.hasBelowDefault()) return;
    const now = this.ctx.clock.now();
    const isEmpty = ({ type, shard }: ShardRef) => {
      const partition = shardPartition(type, shard);
      return (
        this.limitedTypes.has(type) ||
        empty.has(partition) ||
        this.state.isDrained(partition, now, this.ctx.config.pollIntervalMs)
      );
    };
    if (!defaultsEmpty(partitions, isEmpty)) return;
    const below = await this.guard(() => this.lanes.belowDefault(this.window(), this.limitedTypes));
    if (below) await this.guard(() => this.takeInOrder(below));
    // A lane serving work below the default is read every round while it does.
    for (const type of new Set((below ?? []).map((c) => c.type)))
      this.state.noteLane(type, { readAt: now, waiting: true, below: true });
  }
}
