/**
 * Checks a schedule to put before anything is written: the name, the body, the time zone (made
 * canonical: what is stored and sent to EventBridge Scheduler), the expression (trimmed) in that zone, a one-time
 * time that is still ahead, and the task's type and payload. Each problem is a ValidationError naming
 * the field, so the caller is told what to fix.
 */
import { ValidationError } from '../errors.js';
import { parseInput } from '../task-inputs.js';
import type { TaskRegistry } from '../tasks/registry.js';
import { ExpressionError, parseExpression } from './schedule-expression.js';
import { scheduleBody, scheduleNameSchema, type ScheduleBody } from './schedule-model.js';
import { canonicalTimeZone, TimeZoneError } from './time-zones.js';

const OPERATION = 'putSchedule';

export function parseScheduleInput(
  name: string,
  body: unknown,
  registry: TaskRegistry,
  now: number,
): ScheduleBody {
  parseInput(scheduleNameSchema, OPERATION, name);
  const input = parseInput(scheduleBody, OPERATION, body);
  const timezone = fieldOrThrow('timezone', () => canonicalTimeZone(input.timezone));
  const expression = fieldOrThrow('expression', () => parseExpression(input.expression, timezone));
  // Scheduler would keep a one-time schedule whose time has passed and never invoke it.
  if (expression.kind === 'at' && expression.at <= now) {
    throw new ValidationError(OPERATION, [
      {
        path: 'expression',
        message: `${input.expression.trim()} is in the past (${new Date(expression.at).toISOString()} in ${timezone}); a one-time schedule needs a time ahead`,
      },
    ]);
  }
  try {
    registry.parsePayload(input.task.type, input.task.payload, OPERATION);
  } catch (error) {
    if (error instanceof ValidationError)
      throw new ValidationError(
        error.operation,
        error.problems.map((p) => ({ ...p, path: `task.${p.path}` })),
      );
    throw error;
  }
  return { ...input, expression: input.expression.trim(), timezone };
}

function fieldOrThrow<T>(path: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof ExpressionError || error instanceof TimeZoneError)
      throw new ValidationError(OPERATION, [{ path, message: error.message }]);
    throw error;
  }
}
