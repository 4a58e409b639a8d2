/** GET /stats as the API shows it (statsAnswerSchema): times in ISO-8601, running tasks as lists show tasks. */
import type { QueueStats } from '../stats/stats-reader.js';
import { taskJson } from './task-json.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function statsJson(stats: QueueStats): Record<string, unknown> {
  const { queue } = stats;
  return {
    owner: stats.owner,
    at: iso(stats.at),
    ...(queue
      ? {
          queue: {
            at: iso(queue.at),
            types: queue.types.map(({ oldestDueAt, ...type }) => ({
              ...type,
              ...(oldestDueAt === undefined ? {} : { oldestDueAt: iso(oldestDueAt) }),
            })),
            leased: queue.leased,
            delayed: queue.delayed,
            ...(queue.nextDueAt === undefined ? {} : { nextDueAt: iso(queue.nextDueAt) }),
          },
        }
      : {}),
    running: stats.running.map(taskJson),
    runningComplete: stats.runningComplete,
    minutes: stats.minutes.map((m) => ({ at: iso(m.at), types: m.types })),
  };
}
