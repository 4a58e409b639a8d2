/**
 * The handler for the schedules' EventBridge Scheduler target: one tick of one schedule. Call it once,
 * at module level.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import * as z from 'zod';
import { createRequestLeasehold } from '../request-app.js';
import { loadConfig } from '../config.js';
import { lambdaKicker } from '../fleet/lambda-kicker.js';
import { writeTargetOf } from '../store/context.js';
import type { FireInput } from '../schedules/scheduler-sync.js';
import type { TaskDefinition } from '../tasks/define.js';

export function createFireHandler(taskDefinitions: TaskDefinition[]) {
  const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;

  // Parsed once per execution environment; the task catalog is the application's content.
  const app = createRequestLeasehold(loadConfig(process.env), taskDefinitions);
  const logger = new Logger({ serviceName: 'leasehold-fire' });
  // A fired schedule's task starts at once (coalesced kick), not at the next worker tick.
  const kicker = lambdaKicker(app.config, app.events, app.clock, logger, writeTargetOf(app.store.ctx));

  /** The input each schedule's target carries (FireInput in shared/schedules/scheduler-sync.ts). */
  const fireEvent = z.object({
    scheduleName: z.string().min(1),
    owner: z.string().min(1),
    generation: z.string().min(1),
    scheduledTime: z.iso.datetime({ offset: true }),
  }) satisfies z.ZodType<FireInput>;

  const handler = async (event: unknown) => {
    const parsed = fireEvent.safeParse(event);
    if (!parsed.success) {
      // Retrying cannot fix a malformed event: log it and let it go (it is not a task to lose).
      logger.error('malformed fire event', {
        issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`),
        // Schedules made before names were per owner send no owner or generation: PUT them again.
        ...(isObject(event) && !('owner' in event)
          ? {
              fix: 'a schedule made before per-owner names: PUT it again (its old EventBridge schedule can be deleted)',
            }
          : {}),
      });
      return { fired: false, reason: 'malformed-event' };
    }
    const { scheduleName: name, owner, generation, scheduledTime } = parsed.data;
    const outcome = await app.schedules.fire({
      owner,
      name,
      generation,
      scheduledTime: Date.parse(scheduledTime),
    });
    await kicker?.settled();
    logger.info('schedule fired', {
      schedule: name,
      owner,
      scheduledTime,
      ...outcome,
    });
    return outcome;
  };
  return handler;
}
