/**
 * The optional kick of the direct client: the API's own (fleet/enqueue-kicker.ts), wired to a Lambda
 * client with the direct client's region, credentials and endpoint, which `lambdaKicker` (the Lambda
 * entry points' wiring) does not take: it builds its client from the process's environment.
 * Without a worker function nothing is kicked, and the worker's scheduled tick finds the task.
 */
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../clock.js';
import type { LeaseholdConfig } from '../config.js';
import type { LeaseEvents } from '../events.js';
import { EnqueueKicker } from '../fleet/enqueue-kicker.js';
import { FleetSeats } from '../fleet/fleet-seats.js';
import { kickHorizonMs } from '../fleet/fleet-rules.js';
import { LambdaAsyncInvoke } from '../fleet/lambda-invoke.js';
import { LambdaWorkerInvoker } from '../fleet/worker-invoker.js';
import { mathRandom } from '../ids.js';
import type { WriteTarget } from '../store/conditional-write.js';

export interface DirectKick {
  /** Waits (bounded) for the kicks the last enqueues sent: a caller in a Lambda is frozen after it returns. */
  settled(): Promise<void>;
  /** Invokes sent and failed (a failed one is logged nowhere: the kick is a hint). */
  readonly counts: { sent: number; failed: number };
  close(): void;
}

export function directKick(options: {
  functionName: string | undefined;
  endpoint: string | undefined;
  region: string;
  credentials: DynamoDBClientConfig['credentials'];
  config: Pick<LeaseholdConfig, 'kickIntervalMs' | 'workerMaxConcurrency' | 'recoveryIntervalMs'>;
  events: LeaseEvents;
  clock: Clock;
  /** The task table, where the fleet's seats are read. */
  table: WriteTarget;
}): DirectKick | undefined {
  if (options.functionName === undefined) return undefined;
  const lambda = new LambdaAsyncInvoke({
    region: options.region,
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
  });
  // A kick is a hint (the tick finds the task anyway): a refused Invoke must not fail the enqueue.
  const invoker = new LambdaWorkerInvoker(options.functionName, lambda);
  const seats = new FleetSeats({
    target: options.table,
    clock: options.clock,
    random: mathRandom,
    cap: options.config.workerMaxConcurrency,
  });
  const kicker = new EnqueueKicker(
    invoker,
    options.clock,
    options.config.kickIntervalMs,
    kickHorizonMs(options.config.recoveryIntervalMs),
    seats,
  );
  const unsubscribe = kicker.listen(options.events);
  return {
    settled: () => kicker.settled(),
    counts: invoker.counts,
    close: () => {
      unsubscribe();
      lambda.destroy();
    },
  };
}
