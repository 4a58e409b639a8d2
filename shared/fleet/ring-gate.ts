/**
 * The fleet's look gate (worker.ts, RunOptions.lookGate): an idle poll of a worker invocation reads its
 * own seat (one item: fleet-seats.ts) and reads the ready partitions only when the seat was rung since
 * the invocation last looked, or when it has not read them for TUNING.fleet.safetyReadMs (work that reached no
 * invocation, a ring lost with its ringer, is then found by whoever polls, well before the tick).
 */
import type { Clock } from '../clock.js';
import type { LookGate } from '../worker/worker.js';
import type { FleetSeats, SeatLease } from './fleet-seats.js';
import { TUNING } from '../tuning.js';

export class RingGate implements LookGate {
  private rings = 0;
  private readAt: number;

  constructor(
    private readonly seats: Pick<FleetSeats, 'ringsOf'>,
    private readonly lease: SeatLease,
    private readonly clock: Clock,
  ) {
    this.readAt = clock.now();
  }

  /** The rings of this seat the invocation has read for (more, when it gives the seat back, are unanswered). */
  get seen(): number {
    return this.rings;
  }

  async shouldRead(): Promise<boolean> {
    const now = this.clock.now();
    try {
      const rings = await this.seats.ringsOf(this.lease);
      if (rings > this.rings) {
        this.rings = rings;
        this.readAt = now;
        return true;
      }
    } catch {
      // The seat could not be read: read the partitions rather than miss work.
      this.readAt = now;
      return true;
    }
    if (now - this.readAt < TUNING.fleet.safetyReadMs) return false;
    this.readAt = now;
    return true;
  }
}
