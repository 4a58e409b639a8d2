/**
 * One task's log lines: the worker's logger, with the task's keys on every line. Not
 * `Logger.createChild()`: that builds a whole Logger per task (environment reads, a new Console),
 * which measured about 6 % of the worker's CPU while a burst of tasks started.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { TaskLogger } from '../tasks/define.js';

export function taskLog(logger: Logger, keys: Readonly<Record<string, unknown>>): TaskLogger {
  // The task's keys last: a handler's extra cannot make a line claim another task.
  return {
    debug: (message, extra) => logger.debug(message, { ...extra, ...keys }),
    info: (message, extra) => logger.info(message, { ...extra, ...keys }),
    warn: (message, extra) => logger.warn(message, { ...extra, ...keys }),
    error: (message, extra) => logger.error(message, { ...extra, ...keys }),
  };
}
