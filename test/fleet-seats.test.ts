/**
 * The fleet's seats on the emulator: never more than `cap` held at once, even when many invocations
 * take together; an expired seat is taken again; a release only undoes its own take.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetSeats, type SeatLease } from '../shared/fleet/fleet-seats.js';
import { writeTargetOf } from '../shared/store/context.js';
import { seededRandom } from './support/fleet-fakes.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';
import { TUNING } from '../shared/tuning.js';

let server: TestDynamo;

beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

/** A fresh table per test: the seats are one partition of the task table. */
async function fleet(cap: number) {
  const t = await createTestStore(server.endpoint);
  let peers = 0;
  /** Seats as one invocation sees them: its own client (a peer store's), the shared manual clock. */
  const seats = (c = cap) =>
    new FleetSeats({
      target: writeTargetOf(t.peer().ctx),
      clock: t.clock,
      random: seededRandom(++peers),
      cap: c,
    });
  return { t, seats };
}

interface RawSeat {
  pk: string;
  sk: string;
  holder?: string;
  token?: number;
  until?: number;
}

/** The seat items as stored (a consistent Query, independent of FleetSeats.read). */
async function rawSeats(t: TestStore): Promise<RawSeat[]> {
  const out = await t.doc.send(
    new QueryCommand({
      TableName: t.config.tableName,
      KeyConditionExpression: 'pk = :p',
      ExpressionAttributeValues: { ':p': 'FLEET' },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []) as RawSeat[];
}

const heldNow = (items: RawSeat[], now: number) =>
  items.filter((i) => i.holder !== undefined && (i.until ?? 0) > now);

describe('fleet seats (emulator)', () => {
  it('30 invocations taking at once with cap 5: exactly 5 seats, distinct, the rest get none', async () => {
    const { t, seats } = await fleet(5);
    const until = t.clock.now() + 60_000;
    const leases = await Promise.all(Array.from({ length: 30 }, (_, i) => seats().take(`inv-${i}`, until)));
    const won = leases.filter((l): l is SeatLease => l !== undefined);
    expect(won).toHaveLength(5);
    expect(won.map((l) => l.index).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(new Set(won.map((l) => l.holder)).size).toBe(5);
    expect(won.every((l) => l.token === 1 && l.until === until)).toBe(true);
    expect(leases.filter((l) => l === undefined)).toHaveLength(25);

    const observer = seats();
    expect(await observer.running()).toBe(5);
    // The invariant on the stored items themselves: 5 held, each by the holder its lease names.
    const items = await rawSeats(t);
    expect(heldNow(items, t.clock.now())).toHaveLength(5);
    expect(items.map((i) => [i.sk, i.holder]).sort()).toEqual(
      won.map((l) => [`SEAT#${String(l.index).padStart(5, '0')}`, l.holder]).sort(),
    );

    // One gives its seat back: the next taker gets exactly that seat, and the fleet is full again.
    const leaving = won.find((l) => l.index === 3)!;
    expect(await observer.release(leaving)).toBe(true);
    expect(await observer.running()).toBe(4);
    const next = await seats().take('inv-late', until);
    expect(next).toMatchObject({ index: 3, holder: 'inv-late', token: 2 });
    expect(await seats().take('inv-later', until)).toBeUndefined();
    expect(heldNow(await rawSeats(t), t.clock.now())).toHaveLength(5);
  });

  it('30 deciders reserving at once with cap 5 and seat 0 held: exactly the 4 free seats, seat 0 never; each adopted once', async () => {
    const { t, seats } = await fleet(5);
    const until = t.clock.now() + 60_000;
    await seats().take('keeper', until);
    const reserved = (await Promise.all(Array.from({ length: 30 }, () => seats().reserve()))).filter(
      (l): l is SeatLease => l !== undefined,
    );
    expect(reserved.map((l) => l.index).sort()).toEqual([1, 2, 3, 4]);
    expect(
      reserved.every(
        (l) => l.holder.startsWith('starting/') && l.until === t.clock.now() + TUNING.fleet.reservationMs,
      ),
    ).toBe(true);
    expect(heldNow(await rawSeats(t), t.clock.now())).toHaveLength(5);
    // Each started invocation takes its own seat over; a second adoption of the same reservation is refused.
    const adopted = await Promise.all(reserved.map((r, i) => seats().adopt(r, `inv-${i}`, until)));
    expect(adopted.map((a) => a?.holder)).toEqual(reserved.map((_, i) => `inv-${i}`));
    expect(adopted.every((a, i) => a!.token === reserved[i]!.token + 1 && a!.until === until)).toBe(true);
    expect(await seats().adopt(reserved[0]!, 'inv-again', until)).toBeUndefined();
    expect(heldNow(await rawSeats(t), t.clock.now())).toHaveLength(5);
  });

  it('a reservation takes seat 0 last: only when no other seat is free (the timekeeper of a full fleet returned)', async () => {
    const { t, seats } = await fleet(3);
    const until = t.clock.now() + 60_000;
    const held = await Promise.all([0, 1, 2].map((i) => seats().take(`a-${i}`, until)));
    await seats().release(held.find((l) => l!.index === 0)!);
    await seats().release(held.find((l) => l!.index === 2)!);
    expect((await seats().reserve())?.index).toBe(2);
    expect((await seats().reserve())?.index).toBe(TUNING.fleet.timekeeperSeat);
    expect(await seats().reserve()).toBeUndefined();
    // A hand-over reserves seat 0 only, and only while it is free.
    expect(await seats().reserveTimekeeper()).toBeUndefined();
  });

  it('a second wave of takers racing for one freed seat: exactly one wins it', async () => {
    const { t, seats } = await fleet(3);
    const until = t.clock.now() + 60_000;
    const first = await Promise.all([0, 1, 2].map((i) => seats().take(`a-${i}`, until)));
    expect(first.map((l) => l?.index).sort()).toEqual([0, 1, 2]);
    await seats().release(first.find((l) => l!.index === 1)!);
    const wave = await Promise.all(Array.from({ length: 12 }, (_, i) => seats().take(`b-${i}`, until)));
    expect(wave.filter((l) => l !== undefined).map((l) => l!.index)).toEqual([1]);
    expect(heldNow(await rawSeats(t), t.clock.now())).toHaveLength(3);
  });

  it('the first take in an empty fleet gets the timekeeper seat 0', async () => {
    const { t, seats } = await fleet(8);
    const lease = await seats().take('first', t.clock.now() + 60_000);
    expect(lease).toMatchObject({ index: TUNING.fleet.timekeeperSeat, holder: 'first', token: 1 });
    // Later takes never get seat 0 while it is held.
    const second = await seats().take('second', t.clock.now() + 60_000);
    expect(second?.index).not.toBe(TUNING.fleet.timekeeperSeat);
  });

  it('an expired seat (until <= now) is taken again; before that it is refused', async () => {
    const { t, seats } = await fleet(1);
    const now = t.clock.now();
    const a = await seats().take('a', now + 1_000);
    expect(a).toMatchObject({ index: 0, token: 1 });
    t.clock.advance(999);
    expect(await seats().take('b', t.clock.now() + 1_000)).toBeUndefined();
    expect(await seats().running()).toBe(1);
    t.clock.advance(1); // now === a.until: a's invocation has certainly ended
    expect(await seats().running()).toBe(0);
    const b = await seats().take('b', t.clock.now() + 1_000);
    expect(b).toMatchObject({ index: 0, holder: 'b', token: 2 });
    expect(await seats().running()).toBe(1);
  });

  it("a release with a stale take (the seat expired and was re-taken) fails and keeps the new holder's seat", async () => {
    const { t, seats } = await fleet(1);
    const a = (await seats().take('a', t.clock.now() + 1_000))!;
    t.clock.advance(1_000);
    const b = (await seats().take('b', t.clock.now() + 60_000))!;
    expect(b.index).toBe(a.index);
    expect(await seats().release(a)).toBe(false);
    expect(await seats().running()).toBe(1);
    expect(await rawSeats(t)).toEqual([expect.objectContaining({ holder: 'b', token: 2, until: b.until })]);
    expect(await seats().take('c', t.clock.now() + 60_000)).toBeUndefined();

    // The same holder name with an old token is still refused: the token, not the name, proves the take.
    t.clock.advance(60_000);
    const a2 = (await seats().take('a', t.clock.now() + 60_000))!;
    expect(a2.token).toBe(3);
    expect(await seats().release(a)).toBe(false);
    expect(await seats().release(b)).toBe(false);
    expect(await seats().running()).toBe(1);
    expect(await seats().release(a2)).toBe(true);
    expect(await seats().running()).toBe(0);
    // Released twice: the second finds the seat no longer its own.
    expect(await seats().release(a2)).toBe(false);
  });

  it('seats at or above a lowered cap are ignored: not counted, never taken', async () => {
    const { t, seats } = await fleet(5);
    const until = t.clock.now() + 60_000;
    const all = await Promise.all([0, 1, 2, 3, 4].map((i) => seats().take(`w-${i}`, until)));
    const byIndex = new Map(all.map((l) => [l!.index, l!]));
    expect(byIndex.size).toBe(5);

    const lowered = seats(2);
    expect(lowered.cap).toBe(2);
    expect(await lowered.running()).toBe(2);
    expect(await lowered.take('x', until)).toBeUndefined();
    // A free seat above the lowered cap is still not taken.
    expect(await lowered.release(byIndex.get(4)!)).toBe(true);
    expect(await lowered.take('x', until)).toBeUndefined();
    expect(await lowered.running()).toBe(2);
    // A free seat below it is.
    expect(await lowered.release(byIndex.get(1)!)).toBe(true);
    expect(await lowered.take('x', until)).toMatchObject({ index: 1, holder: 'x' });
    // Three old holders above the cap still hold their seats (they end on their own); the
    // lowered fleet's view counts only its two.
    expect(heldNow(await rawSeats(t), t.clock.now())).toHaveLength(4);
    expect(await lowered.running()).toBe(2);
  });

  it('read() shows each seat with its holder, token and until; a released seat as free', async () => {
    const { t, seats } = await fleet(3);
    const s = seats();
    expect((await s.read()).size).toBe(0);
    const a = (await s.take('a', t.clock.now() + 5_000))!;
    const b = (await s.take('b', t.clock.now() + 7_000))!;
    await s.release(a);
    const view = await s.read();
    expect(view.get(a.index)).toEqual({ index: a.index, holder: undefined, token: 1, until: 0 });
    expect(view.get(b.index)).toEqual({ index: b.index, holder: 'b', token: 1, until: b.until });
  });
});
