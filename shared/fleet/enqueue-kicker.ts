/**
 * Kick on enqueue: when a task arrives that is due now (or before the next scheduled tick could see
 * it), start a worker invocation at once instead of waiting up to a minute for the tick. Coalesced
 * per process (KickGate): a burst of enqueues costs one Invoke per interval, not one per task; an
 * idle system sends none. The started invocation takes a fleet seat or returns at once, so a kick
 * never adds a worker beyond the cap.
 */
import type { Clock } from '../clock.js';
import type { LeaseEvents } from '../events.js';
import { shardForId } from '../table-layout.js';
import { kickFor, KickGate } from './fleet-rules.js';
import type { FleetSeats } from './fleet-seats.js';
import type { LookFirst, WorkerInvoker } from './worker-invoker.js';

/** The longest an enqueue's answer waits for its kick to be sent (an async Invoke answers in tens of ms). */
export const KICK_WAIT_MS = 300;

export class EnqueueKicker {
  private readonly gate: KickGate;
  private readonly inFlight = new Set<Promise<boolean>>();

  /**
   * `horizonMs`: a task due within this long is kicked for (fleet-rules.ts kickHorizonMs: a later one is
   * certainly seen by a scheduled tick).
   * `seats`: when given, each kick first reads the fleet (one eventually consistent query) and starts
   * nothing the fleet does not need: no worker at the cap, no timekeeper while one keeps time.
   */
  constructor(
    private readonly invoker: WorkerInvoker,
    private readonly clock: Clock,
    intervalMs: number,
    private readonly horizonMs: number,
    private readonly seats?: Pick<FleetSeats, 'read' | 'cap'>,
  ) {
    this.gate = new KickGate(intervalMs);
  }

  /** Kicks for every task enqueued through this stream (the store emits 'task:enqueued'). Returns the unsubscribe. */
  listen(events: LeaseEvents): () => void {
    return events.on('task:enqueued', ({ taskId, type, availableAt, readySk }) =>
      this.taskArrived(availableAt, {
        type,
        shard: shardForId(taskId),
        ...(readySk === undefined ? {} : { taskId, readySk }),
      }),
    );
  }

  /** A task due at `availableAt` was enqueued (in the partition `where`, which the started worker reads first). */
  taskArrived(availableAt: number, where?: LookFirst): void {
    const now = this.clock.now();
    if (availableAt - now > this.horizonMs || !this.gate.admit(now)) return;
    const sent = this.kick(availableAt <= now, where);
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  /**
   * A task due now starts a worker that reads its partition first; a delayed one only makes sure an
   * invocation keeps time. Without a fleet view (or when it cannot be read) it starts one anyway:
   * the started invocation takes a seat or returns at once, so the cap holds either way.
   */
  private async kick(dueNow: boolean, where: LookFirst | undefined): Promise<boolean> {
    let action: ReturnType<typeof kickFor> = dueNow ? 'start-worker' : 'start-timekeeper';
    if (this.seats) {
      try {
        action = kickFor(dueNow, await this.seats.read(), this.seats.cap, this.clock.now());
      } catch {
        // The fleet could not be read: kick anyway.
      }
    }
    if (action === 'start-worker')
      return this.invoker.start('leasehold.kick', where ? { lookFirst: where } : {});
    if (action === 'start-timekeeper') return this.invoker.start('leasehold.due', { keepTime: true });
    return false;
  }

  /**
   * Waits for the kicks still being sent, at most `maxWaitMs`. A Lambda entry point awaits this before
   * it returns: Lambda freezes the process after the return, and an Invoke left in flight would go out
   * minutes later or never. Bounded, so a slow Invoke never holds up the enqueue's answer for long (a
   * kick is a hint: the tick or a poll finds the task anyway).
   */
  async settled(maxWaitMs = KICK_WAIT_MS): Promise<void> {
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.inFlight]),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, maxWaitMs))),
    ]);
    clearTimeout(timer);
  }
}
