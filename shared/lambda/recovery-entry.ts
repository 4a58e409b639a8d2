/**
 * The recovery Lambda's handler for a set of task types, started by its schedule: one bounded sweep of
 * expired leases and due delayed tasks. Call it once, at module level.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { loadConfig } from '../config.js';
import { createTaskRuntime } from '../task-runtime.js';
import { powertoolsMetrics } from '../metrics.js';
import { runRecoverySweep } from '../recovery/recovery-sweep.js';
import { lambdaKicker } from '../fleet/lambda-kicker.js';
import { writeTargetOf } from '../store/context.js';
import { GaugeRotation } from '../store/gauge-rotation.js';
import { LegacyDelayWatch } from '../store/legacy-delays.js';
import type { LeaseEventMap } from '../events.js';
import { shardForId } from '../table-layout.js';
import type { TaskDefinition } from '../tasks/define.js';

export function createRecoveryHandler(taskDefinitions: TaskDefinition[]) {
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

  const handler = async () => {
    // What the sweep readies (requeued, promoted), by key where it can be handed over so.
    const readied: LeaseEventMap['task:readied'][] = [];
    const stopListening = app.events.on('task:readied', (event) => readied.push(event));
    const report = await runRecoverySweep(
      app.store,
      { clock: app.clock, metrics, logger, rotation, legacy },
      app.registry.names(),
    ).finally(stopListening);
    // A requeued task (its holder died) or a promoted one (no timekeeper was up when it fell due) has no
    // kick of its own: without this one it waits for a polling invocation's safety read or the next tick.
    // It is handed over by key: the index may not show it yet when the invocation reads (a read-all
    // kick's worker found nothing and returned, and the task waited for the next tick).
    // Every requeue and promotion emits its own event (an event without a task is the store's notice
    // that a sweep ran); one at another priority asks the worker to read, keeping priority order.
    if (kicker && report.requeued + report.promoted > 0) {
      const now = app.clock.now();
      for (const { taskId, byKey } of readied)
        if (taskId !== undefined)
          kicker.taskArrived(
            now,
            byKey
              ? { type: byKey.type, shard: shardForId(taskId), taskId, readySk: byKey.readySk }
              : undefined,
          );
      await kicker.settled();
    }
    return report;
  };
  return handler;
}
