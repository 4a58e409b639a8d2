/**
 * A task's log lines (worker/task-log.ts): the worker's own Powertools logger, with the task's keys
 * on every line, whatever the handler passes.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { taskLog } from '../shared/worker/task-log.js';

afterEach(() => vi.restoreAllMocks());

/** The JSON lines the logger printed while `run` ran. */
function printed(run: () => void): Record<string, unknown>[] {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    lines.push(String(chunk));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  run();
  vi.restoreAllMocks();
  return lines
    .flatMap((l) => l.split('\n').filter((s) => s.trim().startsWith('{')))
    .map((l) => JSON.parse(l));
}

describe('taskLog', () => {
  it("puts the task's keys and the handler's extra on each line, at each level", () => {
    const lines = printed(() => {
      const logger = new Logger({ serviceName: 'worker-under-test', logLevel: 'DEBUG' });
      const log = taskLog(logger, { taskId: 't-1', taskType: 'mail', attempt: 2 });
      log.debug('d');
      log.info('i', { step: 'render' });
      log.warn('w');
      log.error('e', { code: 'X' });
    });
    expect(lines.map((l) => [l.level, l.message, l.taskId, l.taskType, l.attempt])).toEqual([
      ['DEBUG', 'd', 't-1', 'mail', 2],
      ['INFO', 'i', 't-1', 'mail', 2],
      ['WARN', 'w', 't-1', 'mail', 2],
      ['ERROR', 'e', 't-1', 'mail', 2],
    ]);
    expect(lines[1]!.step).toBe('render');
    expect(lines[3]!.code).toBe('X');
  });

  it("does not let a handler's extra make a line name another task, and keeps the worker's logger clean", () => {
    const lines = printed(() => {
      const logger = new Logger({ serviceName: 'worker-under-test', logLevel: 'INFO' });
      taskLog(logger, { taskId: 't-1' }).info('spoof', { taskId: 'other' });
      logger.info('worker line');
    });
    expect(lines.map((l) => [l.message, l.taskId])).toEqual([
      ['spoof', 't-1'],
      ['worker line', undefined],
    ]);
  });
});
