/** Lambda entry point for recovery, started by its schedule: one bounded sweep of expired leases and due delayed tasks. */
import { Logger } from '@aws-lambda-powertools/logger';
import { loadConfig } from '../shared/config.js';
import { createTaskRuntime } from '../shared/task-runtime.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { powertoolsMetrics } from '../shared/metrics.js';
import { runRecoverySweep } from '../shared/recovery/recovery-sweep.js';
import { lambdaKicker } from '../shared/fleet/lambda-kicker.js';
import { writeTargetOf } from '../shared/store/context.js';
import { GaugeRotation } from '../shared/store/gauge-rotation.js';
import { LegacyDelayWatch } from '../shared/store/legacy-delays.js';

const app = createTaskRuntime(loadConfig(process.env), taskDefinitions);
const logger = new Logger({ serviceName: 'leasehold-recovery' });
const metrics = powertoolsMetrics('leasehold-recovery');
// Which types this environment's last sweeps found empty: those are looked at in part (a new environment reads all).
const rotation = new GaugeRotation();
// Delayed tasks an earlier version queued under the lease index's keys: looked for in this container's first hour.
const legacy = new LegacyDelayWatch();
// Tasks the sweep readied start a worker now (LEASEHOLD_WORKER_FUNCTION_ARN), as an enqueue's do.
const kicker = lambdaKicker(app.config, app.events, app.clock, logger, writeTargetOf(app.store.ctx), {
  readSeats: false,
});

export const handler = async () => {
  const report = await runRecoverySweep(
    app.store,
    { clock: app.clock, metrics, logger, rotation, legacy },
    app.registry.names(),
  );
  // A requeued task (its holder died) or a promoted one (no timekeeper was up when it fell due) has no
  // kick of its own: without this one it waits for a polling invocation's safety read or the next tick.
  if (kicker && report.requeued + report.promoted > 0) {
    kicker.taskArrived(app.clock.now());
    await kicker.settled();
  }
  return report;
};
