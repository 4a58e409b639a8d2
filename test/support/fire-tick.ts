/** Fires a tick the way a schedule's EventBridge target does: the owner's name, with its current generation. */
import type { FireOutcome, ScheduleService } from '../../shared/schedules/schedule-service.js';

export async function fireTick(
  schedules: ScheduleService,
  owner: string,
  name: string,
  scheduledTime: number,
): Promise<FireOutcome> {
  const generation = await schedules.get(name, owner).then(
    (def) => def.generation,
    () => undefined,
  );
  return schedules.fire({ owner, name, generation, scheduledTime });
}
