/**
 * Self-starts (scale-ups, hand-overs, prewarms) go through this invoker, which keeps the fleet's own
 * bound on its chains of invocations in place of Lambda's recursive loop detection (the worker sets
 * RecursiveLoop to Allow: see tuning.ts, TUNING.fleet.chainGenerationBound). It stamps each start with its
 * generation, the running invocation's plus one; past the bound it sends a start only into a seat
 * reserved for it, reserving one itself (seat 0 for a timekeeper) when the caller did not, and sends
 * nothing when every seat is held.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { describeError } from '../errors.js';
import { chainStartAllowed } from './fleet-rules.js';
import type { FleetSeats, SeatLease } from './fleet-seats.js';
import type { InvocationSource, StartHints, WorkerInvoker } from './worker-invoker.js';
import { startIntoSeat } from './reserved-start.js';

export class ChainInvoker implements WorkerInvoker {
  private generation = 0;
  /** Starts sent, and refused past the bound for want of a free seat (figures and tests). */
  readonly counts = { sent: 0, refused: 0 };

  constructor(
    private readonly deps: {
      invoker: WorkerInvoker;
      seats: Pick<FleetSeats, 'reserve' | 'reserveTimekeeper' | 'release'>;
      logger: Pick<Logger, 'warn' | 'info'>;
    },
  ) {}

  /** The running invocation's generation (its start event's; 0 when it has none): invocations in one environment run one at a time. */
  enter(generation: number): void {
    this.generation = generation;
  }

  async start(source: InvocationSource, hints: StartHints = {}): Promise<boolean> {
    const generation = this.generation + 1;
    let reserved: SeatLease | undefined;
    if (!chainStartAllowed(generation, hints.seat !== undefined)) {
      reserved = await this.reserve(hints);
      if (!reserved) {
        this.counts.refused++;
        this.deps.logger.info('a deep chain starts no invocation while every seat is held', {
          source,
          generation,
        });
        return false;
      }
    }
    const sent = reserved
      ? await startIntoSeat(this.deps, reserved, source, { ...hints, generation })
      : await this.deps.invoker.start(source, { ...hints, generation });
    if (sent) this.counts.sent++;
    return sent;
  }

  private async reserve(hints: StartHints): Promise<SeatLease | undefined> {
    const { seats, logger } = this.deps;
    try {
      return await (hints.keepTime ? seats.reserveTimekeeper() : seats.reserve());
    } catch (error) {
      logger.warn('reserving a seat for a deep chain failed; starting nothing', {
        error: describeError(error),
      });
      return undefined;
    }
  }
}
