/** A worker's claim memory on its own (pure: times and randomness are given). */
import { describe, expect, it } from 'vitest';
import { ClaimState, type Candidate } from '../shared/store/claim-state.js';
import { shardForId } from '../shared/table-layout.js';
import { TUNING } from '../shared/tuning.js';

const head = (id: string, type = 't'): Candidate => ({ id, type, shard: 0, readySk: `0#${id}` });

describe('claim memory', () => {
  it('is unsure for its first 8 rounds, calm after, contended for 8 rounds after a lost race', () => {
    const s = new ClaimState();
    const randomized: boolean[] = [];
    for (let i = 0; i < 9; i++) {
      randomized.push(s.randomized);
      s.noteRound(0, () => 0.5);
    }
    expect(randomized).toEqual([true, true, true, true, true, true, true, true, false]);
    s.noteRound(1, () => 0.25);
    expect([s.contended, s.randomized]).toEqual([true, true]);
    for (let i = 0; i < 7; i++) s.noteRound(0, () => 0.5);
    expect(s.contended).toBe(true);
    s.noteRound(0, () => 0.5);
    expect(s.contended).toBe(false);
  });

  it('starts at its own partition, moves on by one each round, and jumps after a lost race', () => {
    const s = new ClaimState();
    const first = s.startPartition('worker-a', 16);
    s.noteRound(0, () => 0.5);
    expect(s.startPartition('worker-a', 16)).toBe((first + 1) % 16);
    s.noteRound(1, () => 0.999);
    expect(s.startPartition('worker-a', 16)).toBe((Math.floor(0.999 * 2 ** 31) + 2) % 16);
  });

  it('placed, starts at the share of the partitions its place gives and reads in turn; unplaced again, by its id', () => {
    const s = new ClaimState();
    const byId = s.startPartition('worker-a', 16);
    expect(s.inTurn(16)).toBe(false);
    s.placeAt({ index: 3, of: 8 });
    expect(s.inTurn(16)).toBe(true);
    expect(s.inTurn(4)).toBe(true); // more places than partitions: shared, still in turn
    expect(s.startPartition('worker-a', 16)).toBe(6);
    s.noteRound(0, () => 0.5);
    expect(s.startPartition('worker-a', 16)).toBe(7);
    s.placeAt(undefined);
    expect(s.inTurn(16)).toBe(false);
    expect(s.startPartition('worker-a', 16)).toBe((byId + 1) % 16);
  });

  it('placed among more places than partitions, leaves other places heads until its turn, then offers them; a hinted read, a ring and fewer places take every head', () => {
    const s = new ClaimState();
    const at = (shard: number, id: string): Candidate => ({ id, type: 't', shard, readySk: `0#${id}` });
    const read = (shard: number, ids: string[], hinted = false) => ({
      type: 't',
      shard,
      hinted,
      candidates: ids.map((id) => at(shard, id)),
    });
    const step = TUNING.claim.othersHeadStepMs;
    // Unplaced, or placed among fewer places than partitions: every head is taken at once.
    expect(s.sortHeads(read(9, ['a', 'b']), ['t'], 0)).toMatchObject({ deferred: 0, others: [] });
    s.placeAt({ index: 3, of: 8 });
    expect(s.sortHeads(read(9, ['a', 'b']), ['t'], 0).own).toHaveLength(2);
    s.placeAt({ index: 0, of: 32 }); // shard 0, with place 1: each a slice of its heads
    expect(s.waitsForOthers(['t'])).toBe(true);
    const own = s.sortHeads(read(0, ['a', 'b', 'c', 'd', 'e', 'f']), ['t'], 0);
    expect(own.own.length + own.deferred).toBe(6);
    expect(own.own.length).toBeGreaterThan(0);
    expect(own.deferred).toBeGreaterThan(0); // place 1's slice
    s.noteRound(0, () => 0.5);
    const first = s.sortHeads(read(9, ['g', 'h']), ['t'], 1_000);
    expect(first).toEqual({ own: [], others: [], deferred: 2 });
    s.noteRound(0, () => 0.5);
    // The round looks again when the first of them reaches this worker's turn.
    expect(s.othersDueAt).toBeGreaterThanOrEqual(1_000 + step);
    // Seen again before its turn: still left; once the line's last rank waited, offered (h was taken meanwhile).
    expect(s.sortHeads(read(9, ['g']), ['t'], 1_000 + step - 1).deferred).toBe(1);
    s.noteRound(0, () => 0.5);
    const later = s.sortHeads(read(9, ['g', 'i']), ['t'], 1_000 + TUNING.claim.othersHeadMaxSteps * step);
    expect(later.others.map((h) => h.id)).toEqual(['g']);
    expect(later.deferred).toBe(1);
    s.noteRound(0, () => 0.5);
    expect(s.othersDueAt).toBeGreaterThanOrEqual(1_000 + (TUNING.claim.othersHeadMaxSteps + 1) * step);
    s.noteRound(0, () => 0.5);
    expect(s.othersDueAt).toBeUndefined();
    // Heads left to another place are not kept as spares; unless shared (fewer places), every head is.
    expect(s.sparesOf([at(9, 'm')], ['t'], false)).toEqual([]);
    expect(s.sparesOf([at(9, 'm')], ['t'], true)).toHaveLength(1);
    s.placeAt({ index: 3, of: 8 });
    expect(s.sparesOf([at(9, 'm')], ['t'], false)).toHaveLength(1);
    s.placeAt({ index: 0, of: 32 });
    // A hint's read: the task was enqueued for whoever is fastest.
    expect(s.sortHeads(read(9, ['j'], true), ['t'], 2_000).own).toHaveLength(1);
    // A round answering a ring takes every head it reads; the next one leaves them again.
    s.takeEveryHeadNextRound();
    expect(s.sortHeads(read(9, ['k']), ['t'], 2_000).own).toHaveLength(1);
    s.noteRound(0, () => 0.5);
    expect(s.sortHeads(read(9, ['l']), ['t'], 2_000).deferred).toBe(1);
  });

  it('keeps tasks handed over by key once each, hands out those of the wanted types oldest first, and at most 64', () => {
    const s = new ClaimState();
    s.offerReady(head('a'));
    s.offerReady(head('a'));
    s.offerReady(head('b', 'other'));
    s.offerReady(head('c'));
    expect(s.offeredWaiting).toBe(3);
    expect(s.takeOffered(['t'], 1).map((c) => c.id)).toEqual(['a']);
    expect(s.takeOffered(['t'], 0)).toEqual([]);
    expect(s.takeOffered(['t', 'other'], 5).map((c) => c.id)).toEqual(['b', 'c']);
    for (let i = 0; i < 70; i++) s.offerReady(head(`x${i}`));
    const kept = s.takeOffered(['t'], 100).map((c) => c.id);
    expect(kept).toHaveLength(64);
    expect(kept[0]).toBe('x6');
  });

  it('an idle wait keeps a partition found empty skipped for as long as the worker waits', () => {
    const s = new ClaimState();
    s.noteDrained('t#3', 1_000);
    expect(s.isDrained('t#3', 1_900, 1_000)).toBe(true);
    expect(s.isDrained('t#3', 2_500, 1_000)).toBe(false);
    s.noteDrained('t#3', 1_000);
    s.idleWaitMs = 4_000;
    expect(s.isDrained('t#3', 4_900, 1_000)).toBe(true);
    expect(s.isDrained('t#3', 5_100, 1_000)).toBe(false);
  });

  it('hands out spare heads of the wanted types while they are fresh, and none once stale', () => {
    const s = new ClaimState();
    s.keepSpare([head('a'), head('b', 'other'), head('c')], 1_000);
    expect(s.takeSpare(['t'], 1_500, 1_000, 1).map((c) => c.id)).toEqual(['a']);
    expect(s.takeSpare(['t'], 1_900, 1_000, 5).map((c) => c.id)).toEqual(['c']);
    expect(s.takeSpare(['other'], 2_001, 1_000, 5)).toEqual([]);
  });

  it('skips a drained partition for one poll, and forgets it at once when a task is readied', () => {
    const s = new ClaimState();
    s.noteDrained('t#3', 1_000);
    expect(s.isDrained('t#3', 1_900, 1_000)).toBe(true);
    expect(s.isDrained('t#3', 2_001, 1_000)).toBe(false);
    s.noteDrained('t#4', 5_000);
    s.noteLane('t', { readAt: 5_000, waiting: false, below: false });
    s.forgetDrained();
    expect(s.isDrained('t#4', 5_001, 1_000)).toBe(false);
    expect(s.lastLaneRead('t')).toBeUndefined();
  });

  it('keeps claims of unknown outcome until they are taken for another undo', () => {
    const s = new ClaimState();
    s.noteUnknownClaim({ candidate: head('x'), writeId: 'w1', leaseUntil: 9 });
    expect(s.takeUnknownClaims().map((u) => u.writeId)).toEqual(['w1']);
    expect(s.takeUnknownClaims()).toEqual([]);
  });

  it('takes offered due entries from the head of a shard, and stolen ones from the end of what is due, starting at the longest list', () => {
    // 200 entries due at 1..200 (by index), spread over the delay shards by id.
    const entries = Array.from({ length: 200 }, (_, i) => ({ id: `task-${i}`, dueAt: 1 + i }));
    const byShard = new Map<number, typeof entries>();
    for (const e of entries) byShard.set(shardForId(e.id), [...(byShard.get(shardForId(e.id)) ?? []), e]);
    const longest = Math.max(...[...byShard.values()].map((l) => l.length));

    const owner = new ClaimState();
    owner.offerDue(entries, () => 0);
    const firstOwn = owner.takeDue(100, 8);
    // One entry when entering a shard: the earliest of it.
    expect(firstOwn).toHaveLength(1);
    const ownShard = shardForId(firstOwn[0]!.id);
    expect(firstOwn[0]).toEqual(byShard.get(ownShard)![0]);

    const thief = new ClaimState();
    thief.offerDue(entries, () => 0, { steal: true });
    const firstStolen = thief.takeDue(100, 8);
    expect(firstStolen).toHaveLength(1);
    const stolenShard = shardForId(firstStolen[0]!.id);
    expect(byShard.get(stolenShard)!.length).toBe(longest);
    // The last entry due by now (100) in that shard, not one due later.
    const dueThere = byShard.get(stolenShard)!.filter((e) => e.dueAt <= 100);
    expect(firstStolen[0]).toEqual(dueThere.at(-1));
    thief.noteDueWon();
    const more = thief.takeDue(100, 3);
    expect(more).toEqual(dueThere.slice(-4, -1).reverse());
    // Later, what fell due since comes from the new end.
    const later = thief.takeDue(1_000, 2);
    expect(later).toEqual(byShard.get(stolenShard)!.slice(-2).reverse());
    // A lost race drops the shard, head or tail, and the thief moves on.
    thief.noteDueLost();
    const next = thief.takeDue(1_000, 8);
    expect(next).toHaveLength(1);
    expect(shardForId(next[0]!.id)).not.toBe(stolenShard);
    thief.dropDue();
    expect(thief.dueWaiting).toBe(0);
    expect(thief.takeDue(1_000, 8)).toEqual([]);
  });
});
