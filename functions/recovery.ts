/** Lambda entry point for recovery, started by its schedule: one bounded sweep of expired leases and due delayed tasks. */
import { Logger } from '@aws-lambda-powertools/logger';
import { loadConfig } from '../shared/config.js';
import { createTaskRuntime } from '../shared/task-runtime.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { powertoolsMetrics } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';

const app = createTaskRuntime(loadConfig(process.env), taskDefinitions);
const logger = new Logger({ serviceName: 'leasehold-recovery' });
const metrics = powertoolsMetrics('leasehold-recovery');

export const handler = async () =>
  runRecoverySweep(app.store, { clock: app.clock, metrics, logger }, app.registry.names());
