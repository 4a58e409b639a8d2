/** The chaos checker's flow invariants (test/chaos/flow-checks.ts) fail on the histories that break them. */
import { describe, expect, it } from 'vitest';
import { checkFlows, type StatusWrite } from './chaos/flow-checks.js';

const w = (task: string, status: string, t: number, applied: 'yes' | 'unknown' = 'yes'): StatusWrite => ({
  task,
  status,
  t,
  applied,
});
const tasks = (parent: string, kids: string[]) => [
  { id: parent, status: 'SUCCESS' },
  ...kids.map((id) => ({ id, status: 'SUCCESS', parentId: parent })),
];

describe('the chaos run’s flow invariants', () => {
  const good = [
    w('p', 'WAITING_CHILDREN', 1),
    w('a', 'RUNNING', 2),
    w('b', 'RUNNING', 3),
    w('a', 'SUCCESS', 4),
    w('b', 'SUCCESS', 5),
    w('p', 'QUEUED', 6),
    w('p', 'RUNNING', 7),
    w('p', 'SUCCESS', 8),
  ];

  it('hold on a parent claimed after its last child ended', () => {
    expect(checkFlows(tasks('p', ['a', 'b']), good)).toEqual({ violations: [], parents: 1, children: 2 });
  });

  it('fail when a parent is claimed before its last child ended', () => {
    const early = good.map((x) => (x.task === 'b' && x.status === 'SUCCESS' ? { ...x, t: 7.5 } : x));
    expect(checkFlows(tasks('p', ['a', 'b']), early).violations.map((v) => v.invariant)).toEqual([
      'a parent never starts before its last child ends',
    ]);
  });

  it('fail when a parent is readied twice for one wait', () => {
    const twice = [...good.slice(0, 6), w('p', 'QUEUED', 6.5), ...good.slice(6)];
    expect(checkFlows(tasks('p', ['a', 'b']), twice).violations.map((v) => v.invariant)).toEqual([
      'a parent is readied once per wait',
    ]);
  });

  it('fail when a parent is left waiting with every child ended', () => {
    const stranded = tasks('p', ['a', 'b']).map((t) =>
      t.id === 'p' ? { ...t, status: 'WAITING_CHILDREN' } : t,
    );
    expect(checkFlows(stranded, good.slice(0, 5)).violations.map((v) => v.invariant)).toEqual([
      'a parent is never stranded waiting',
    ]);
  });
});
