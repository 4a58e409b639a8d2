/**
 * The kick on enqueue as a Lambda process wires it: when the stack told this function where the
 * worker is (LEASEHOLD_WORKER_FUNCTION_ARN), every task enqueued through this process's stream starts
 * a worker invocation (coalesced). Without it (the local stack, tests), nothing is kicked.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import type { LeaseholdConfig } from '../config.js';
import type { LeaseEvents } from '../events.js';
import { mathRandom } from '../ids.js';
import type { WriteTarget } from '../store/conditional-write.js';
import { EnqueueKicker } from './enqueue-kicker.js';
import { FleetSeats } from './fleet-seats.js';
import { kickHorizonMs } from './fleet-rules.js';
import { LambdaWorkerInvoker } from './worker-invoker.js';

export function lambdaKicker(
  config: Pick<
    LeaseholdConfig,
    'workerFunctionArn' | 'kickIntervalMs' | 'workerMaxConcurrency' | 'recoveryIntervalMs'
  >,
  events: LeaseEvents,
  clock: Clock,
  logger: Pick<Logger, 'warn'>,
  /** The task table, where the fleet's seats are read. */
  table: WriteTarget,
  /**
   * Whether kicks read the seats first (see EnqueueKicker). Recovery's role may not query the table:
   * its rare kick starts an invocation that takes a seat, or at the cap rings a held one itself.
   */
  options: {
    readSeats: boolean;
    /** The kick's pause check (EnqueueKicker); only a function whose role may read the `TYPES` partition. */
    claimable?: (types: readonly string[]) => Promise<string[]>;
  } = { readSeats: true },
): EnqueueKicker | undefined {
  if (!config.workerFunctionArn) return undefined;
  const invoker = new LambdaWorkerInvoker(config.workerFunctionArn, undefined, (message, detail) =>
    logger.warn(message, detail),
  );
  const seats = options.readSeats
    ? new FleetSeats({ target: table, clock, random: mathRandom, cap: config.workerMaxConcurrency })
    : undefined;
  const kicker = new EnqueueKicker(
    invoker,
    clock,
    config.kickIntervalMs,
    kickHorizonMs(config.recoveryIntervalMs),
    seats,
    options.claimable,
  );
  kicker.listen(events);
  return kicker;
}
