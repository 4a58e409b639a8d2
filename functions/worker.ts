/** Lambda entry point for the worker, started every minute by EventBridge Scheduler; runs until its time is used. */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { createTaskRuntime } from '../shared/task-runtime.js';
import { randomSuffix } from '../shared/ids.js';
import { powertoolsMetrics } from '../shared/worker/metrics.js';
import { Worker } from '../shared/worker/worker.js';

const app = createTaskRuntime(process.env);
const logger = new Logger({ serviceName: 'leasehold-worker' });
const metrics = powertoolsMetrics('leasehold-worker');
// One id per execution environment: invocations in it run one after another, and the fencing token
// (not the id) tells their claims apart.
const workerId = `lambda/${(process.env.AWS_LAMBDA_LOG_STREAM_NAME ?? 'local').replace(/[^A-Za-z0-9._:@/-]/g, '-').slice(-80)}/${randomSuffix()}`;

export const handler = async (_event: unknown, context: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>) => {
  logger.appendKeys({ requestId: context.awsRequestId });
  const worker = new Worker({ store: app.store, registry: app.registry, config: app.config, workerId, logger, metrics });
  return worker.run({ remainingTimeMs: () => context.getRemainingTimeInMillis() });
};
