/** Lambda entry point for the worker, started every minute by EventBridge Scheduler; runs until its time is used. */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { loadConfig } from '../shared/config.js';
import { createTaskRuntime } from '../shared/task-runtime.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { randomSuffix } from '../shared/ids.js';
import { powertoolsMetrics } from '../shared/metrics.js';
import { Worker } from '../shared/worker/worker.js';

const app = createTaskRuntime(loadConfig(process.env), taskDefinitions);
const logger = new Logger({ serviceName: 'leasehold-worker' });
const metrics = powertoolsMetrics('leasehold-worker');
// One id per execution environment: invocations in it run one after another, and the fencing token
// (not the id) tells their claims apart.
const workerId = `lambda/${(process.env.AWS_LAMBDA_LOG_STREAM_NAME ?? 'local').replace(/[^A-Za-z0-9._:@/-]/g, '-').slice(-80)}/${randomSuffix()}`;

// One Worker per execution environment: its claim memory (calm or contended, spare heads, claims of
// unknown outcome still to undo) carries over from one invocation to the next.
const worker = new Worker({
  store: app.store,
  registry: app.registry,
  config: app.config,
  events: app.events,
  workerId,
  logger,
  metrics,
});

export const handler = async (
  _event: unknown,
  context: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>,
) => {
  logger.appendKeys({ requestId: context.awsRequestId });
  return worker.run({ remainingTimeMs: () => context.getRemainingTimeInMillis() });
};
