/** Lambda entry point for recovery, started by its schedule: one bounded sweep of expired leases and due delayed tasks. */
import { Logger } from '@aws-lambda-powertools/logger';
import { createTaskRuntime } from '../shared/task-runtime.js';
import { powertoolsMetrics } from '../shared/worker/metrics.js';
import { runRecoverySweep } from '../shared/worker/recovery-sweep.js';

const app = createTaskRuntime(process.env);
const logger = new Logger({ serviceName: 'leasehold-recovery' });
const metrics = powertoolsMetrics('leasehold-recovery');

export const handler = async () => runRecoverySweep(app.store, metrics, logger, app.registry.names());
