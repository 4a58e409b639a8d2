/**
 * Kick on enqueue: when a task arrives that is due now (or before the next scheduled tick could see
 * it), start a worker invocation at once instead of waiting up to a minute for the tick, and hand it
 * the task by key. Coalesced per process (KickGate): a burst of enqueues costs one Invoke per
 * interval, not one per task; the tasks enqueued within an interval go together in the next kick, each
 * by key. An idle system sends none. The started invocation takes a fleet seat, or at the cap rings a
 * held one so its holder looks for the tasks (fleet-seats.ts), so a kick never adds a worker beyond
 * the cap. A kick for one task reads nothing first: at the rates where single kicks are the rule, a
 * read of the seats per kick would cost more than the rare invocation that finds the fleet full. A kick
 * for several (a burst) reads the seats, one query for all of them, and at the cap rings a held seat
 * instead of starting an invocation that would only find the fleet full (and, in a burst, start cold).
 */
import type { Clock } from '../clock.js';
import type { LeaseEvents } from '../events.js';
import { shardForId } from '../table-layout.js';
import { KickGate, runningCount, timekeeperWanted } from './fleet-rules.js';
import type { FleetSeats } from './fleet-seats.js';
import { type LookFirst, type OfferedTask, type WorkerInvoker } from './worker-invoker.js';
import { TUNING } from '../tuning.js';

/** What the enqueues since the last kick ask for. */
interface KickBatch {
  /** Tasks due now, handed over by key. */
  offers: OfferedTask[];
  /** A due task the kick cannot hand over by key (another priority, or past TUNING.kick.maxOffers): read. */
  readAll: boolean;
  /** Where the first such task waits: read first. */
  lookFirst?: LookFirst;
  /** A task falls due within the horizon: some invocation must keep time. */
  delayed: boolean;
  /** The types of the tasks due now (a kick only for paused types is not sent). */
  types: Set<string>;
  /** A kick for no task in particular (a resumed type's backlog): sent whatever is paused. */
  anyType: boolean;
}

const emptyBatch = (): KickBatch => ({
  offers: [],
  readAll: false,
  delayed: false,
  types: new Set(),
  anyType: false,
});
const dueNowIn = (batch: KickBatch) => batch.offers.length > 0 || batch.readAll;

export class EnqueueKicker {
  private readonly gate: KickGate;
  private readonly inFlight = new Set<Promise<unknown>>();
  private pending = emptyBatch();
  private sending = false;
  private timer: NodeJS.Timeout | undefined;

  /**
   * `horizonMs`: a task due within this long is kicked for (fleet-rules.ts kickHorizonMs: a later one is
   * certainly seen by a scheduled tick).
   * `seats`: when given, a delayed task's kick first reads the fleet (one eventually consistent query)
   * and starts no timekeeper while one keeps time, and a kick for several tasks at the cap rings a
   * held seat instead of starting an invocation.
   * `claimable`: the types among these a worker may claim now (the operators' pauses out, read at most
   * once a poll interval: worker/paused-types.ts); a kick only for paused types starts nothing, since
   * the invocation would claim nothing. Without it every type is claimable.
   */
  constructor(
    private readonly invoker: WorkerInvoker,
    private readonly clock: Clock,
    intervalMs: number,
    private readonly horizonMs: number,
    private readonly seats?: Pick<FleetSeats, 'read' | 'cap' | 'ringIfFull'>,
    private readonly claimable?: (types: readonly string[]) => Promise<string[]>,
  ) {
    this.gate = new KickGate(intervalMs);
  }

  /** Kicks for every task enqueued through this stream (the store emits 'task:enqueued'). Returns the unsubscribe. */
  listen(events: LeaseEvents): () => void {
    const unsubscribe = [
      events.on('task:enqueued', ({ taskId, type, availableAt, readySk }) =>
        this.taskArrived(availableAt, {
          type,
          shard: shardForId(taskId),
          ...(readySk === undefined ? {} : { taskId, readySk }),
        }),
      ),
      // A resumed type's backlog waited while it was paused: a worker reads every partition for it.
      events.on('type:resumed', () => this.taskArrived(this.clock.now())),
    ];
    return () => unsubscribe.forEach((off) => off());
  }

  /** A task due at `availableAt` was enqueued (in the partition `where`; by key when it names the task). */
  taskArrived(availableAt: number, where?: LookFirst): void {
    const now = this.clock.now();
    if (availableAt - now > this.horizonMs) return;
    const batch = this.pending;
    if (availableAt <= now) {
      if (where) batch.types.add(where.type);
      else batch.anyType = true;
    }
    if (availableAt > now) batch.delayed = true;
    else if (where?.taskId && where.readySk && batch.offers.length < TUNING.kick.maxOffers)
      batch.offers.push({
        taskId: where.taskId,
        type: where.type,
        shard: where.shard,
        readySk: where.readySk,
      });
    else {
      batch.readAll = true;
      if (where) batch.lookFirst ??= { type: where.type, shard: where.shard };
    }
    this.schedule();
  }

  /** Sends the pending batch now if the gate allows and no kick is being sent; else once they do. */
  private schedule(): void {
    if (this.sending || this.timer) return;
    if (!dueNowIn(this.pending) && !this.pending.delayed) return;
    const wait = this.gate.waitMs(this.clock.now());
    if (wait === 0) return this.send();
    let fired: () => void = () => undefined;
    this.track(new Promise<void>((resolve) => (fired = resolve)));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.send();
      fired();
    }, wait);
  }

  private send(): void {
    const batch = this.pending;
    this.pending = emptyBatch();
    this.gate.admit(this.clock.now());
    this.sending = true;
    this.track(
      this.kick(batch).finally(() => {
        this.sending = false;
        this.schedule();
      }),
    );
  }

  private track(work: Promise<unknown>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  /**
   * Tasks due now start a worker that takes them by key; a delayed one only makes sure an invocation
   * keeps time: it starts one when seat 0 is free (without a fleet view, or when it cannot be read,
   * it starts one anyway: the started invocation takes seat 0 or returns at once).
   */
  private async kick(batch: KickBatch): Promise<void> {
    const sends: Promise<boolean>[] = [];
    if (dueNowIn(batch)) sends.push(this.startWorker(batch));
    if (batch.delayed) sends.push(this.keepTime());
    await Promise.all(sends);
  }

  private async startWorker(due: KickBatch): Promise<boolean> {
    // Without a pause check (or for a resume) nothing is awaited first: the start goes out at once.
    const batch = this.claimable && !due.anyType && due.types.size > 0 ? await this.unpaused(due) : due;
    if (!batch) return false;
    if (this.seats && (batch.readAll || batch.offers.length > 1) && (await this.fleetFullRung()))
      return false;
    return this.invoker.start('leasehold.kick', {
      ...(batch.readAll ? { readAll: true } : {}),
      ...(batch.lookFirst ? { lookFirst: batch.lookFirst } : {}),
      ...(batch.offers.length > 0 ? { offers: batch.offers } : {}),
    });
  }

  /**
   * The batch without the offers of paused types, or undefined when every task in it is of a paused
   * type. The pauses unreadable: the batch as it is (a kick is a hint; the worker checks them again).
   */
  private async unpaused(batch: KickBatch): Promise<KickBatch | undefined> {
    const types = [...batch.types];
    const open = new Set(await this.claimable!(types).catch(() => types));
    if (open.size === 0) return undefined;
    return { ...batch, offers: batch.offers.filter((o) => open.has(o.type)) };
  }

  /** Whether every seat is held and one was rung for this kick's tasks (on any failure: false, kick). */
  private async fleetFullRung(): Promise<boolean> {
    const seats = this.seats!;
    try {
      if (runningCount((await seats.read()).values(), seats.cap, this.clock.now()) < seats.cap) return false;
      return (await seats.ringIfFull()) === 'rung';
    } catch {
      return false;
    }
  }

  private async keepTime(): Promise<boolean> {
    if (this.seats) {
      try {
        if (!timekeeperWanted(await this.seats.read(), this.clock.now())) return false;
      } catch {
        // The fleet could not be read: kick anyway.
      }
    }
    return this.invoker.start('leasehold.due', { keepTime: true });
  }

  /**
   * Waits for the kicks still being sent or waiting for their interval, at most `maxWaitMs`. A Lambda
   * entry point awaits this before it returns: Lambda freezes the process after the return, and an
   * Invoke left in flight would go out minutes later or never. Bounded, so a slow Invoke never holds up
   * the enqueue's answer for long (a kick is a hint: the tick or a poll finds the task anyway).
   */
  async settled(maxWaitMs: number = TUNING.kick.answerWaitMs): Promise<void> {
    const deadline = Date.now() + maxWaitMs;
    while (this.inFlight.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...this.inFlight]),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, left))),
      ]);
      clearTimeout(timer);
    }
  }
}
