/**
 * An invocation started into a seat reserved for it (fleet-seats.ts `reserve`): the start event names
 * the seat, which the started invocation adopts. A failed Invoke gives the seat back at once; one that
 * never starts anything holds it until the reservation runs out (TUNING.fleet.reservationMs).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { describeError } from '../errors.js';
import type { FleetSeats, SeatLease } from './fleet-seats.js';
import type { InvocationSource, StartHints, WorkerInvoker } from './worker-invoker.js';

export interface ReservedStartDeps {
  seats: Pick<FleetSeats, 'release'>;
  invoker: WorkerInvoker;
  logger: Pick<Logger, 'warn'>;
}

/** Starts an invocation into `seat`; whether the Invoke was sent. */
export async function startIntoSeat(
  deps: ReservedStartDeps,
  seat: SeatLease,
  source: InvocationSource,
  hints: StartHints,
): Promise<boolean> {
  const { index, holder, token } = seat;
  if (await deps.invoker.start(source, { ...hints, seat: { index, holder, token } })) return true;
  await deps.seats.release(seat).catch((error: unknown) =>
    deps.logger.warn('giving back a reserved seat failed; it frees itself shortly', {
      error: describeError(error),
    }),
  );
  return false;
}
