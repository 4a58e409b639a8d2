/** How `leasehold types`, `pause` and `resume` print their answers. */
import type { TypeControlAnswerJson, TypesJson } from '../../shared/api/response-schemas.js';
import { table } from './format.js';

export function typesTable(answer: TypesJson): string {
  if (answer.types.length === 0) return '(no task types)';
  const rows = table(
    ['TYPE', 'STATE', 'WAITING', 'RUNNING', 'DELAYED', 'CHANGED'],
    answer.types.map((t) => [
      t.type,
      t.paused ? 'paused' : 'active',
      String(t.waiting),
      String(t.running),
      String(t.delayed),
      t.changedAt ? `${t.changedAt}${t.changedBy ? ` by ${t.changedBy}` : ''}` : '',
    ]),
  );
  const notes = [
    answer.waitingAt
      ? `waiting as of ${answer.waitingAt}`
      : 'waiting: no gauge yet (recovery writes one a minute)',
    ...(answer.estimated ? ['some counts are estimates (a deep queue is sampled)'] : []),
  ];
  return `${rows}\n(${notes.join('; ')})`;
}

export function typeControlText(answer: TypeControlAnswerJson): string {
  const { type, paused } = answer.type;
  return paused
    ? `${type} paused: its tasks wait; running ones finish (workers see it within ${answer.takesEffectWithinMs} ms)`
    : `${type} resumed: its waiting tasks are claimed again`;
}
