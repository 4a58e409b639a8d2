/** The pure rules of flows (shared/flow-rules.ts, flow-inputs.ts) on a fixed clock. */
import { describe, expect, it } from 'vitest';
import {
  childFailureText,
  decideReadiness,
  failsParent,
  FLOW_CHECK_MAX_MS,
  nextFlowCheck,
} from '../shared/flow-rules.js';
import { flowShape } from '../shared/flow-inputs.js';
import { TaskStatus } from '../shared/task-model.js';

const NOW = 1_800_000_000_000;

describe('a parent’s readiness', () => {
  it('waits while a child is uncounted, queues when all are, fails when one failed it', () => {
    const waiting = { status: TaskStatus.WAITING_CHILDREN };
    expect(decideReadiness({ ...waiting, childrenPending: 2 })).toEqual({ action: 'wait' });
    expect(decideReadiness({ ...waiting, childrenPending: 0 })).toEqual({ action: 'queue' });
    expect(
      decideReadiness({
        ...waiting,
        childrenPending: 0,
        childFailures: 1,
        childFailure: 'child c1 (x) ended FAILED',
      }),
    ).toEqual({ action: 'fail', error: 'CHILD_FAILED: child c1 (x) ended FAILED' });
    // Counted before the wait (a child that ended while its parent ran): still waits for the rest.
    expect(decideReadiness({ ...waiting, childrenPending: 1, childFailures: 1 })).toEqual({ action: 'wait' });
    for (const status of [TaskStatus.QUEUED, TaskStatus.RUNNING, TaskStatus.CANCELLED])
      expect(decideReadiness({ status, childrenPending: 0 })).toEqual({ action: 'none' });
  });

  it('a FAILED or CANCELLED child fails its parent unless optional; a SUCCESS never does', () => {
    const child = { id: 'c', type: 't' };
    expect(failsParent({ ...child, status: TaskStatus.FAILED })).toBe(true);
    expect(failsParent({ ...child, status: TaskStatus.CANCELLED })).toBe(true);
    expect(failsParent({ ...child, status: TaskStatus.FAILED, optional: true })).toBe(false);
    expect(failsParent({ ...child, status: TaskStatus.SUCCESS })).toBe(false);
    expect(childFailureText({ ...child, status: TaskStatus.FAILED, error: 'x'.repeat(500) })).toHaveLength(
      200,
    );
  });
});

describe('recovery’s looks at a waiting parent', () => {
  it('back off from flowCheckMs, doubling, to half an hour', () => {
    expect([0, 1, 2, 3].map((n) => nextFlowCheck(NOW, n, 60_000) - NOW)).toEqual([
      60_000, 120_000, 240_000, 480_000,
    ]);
    expect(nextFlowCheck(NOW, 5, 60_000) - NOW).toBe(FLOW_CHECK_MAX_MS);
    expect(nextFlowCheck(NOW, 10_000, 60_000) - NOW).toBe(FLOW_CHECK_MAX_MS);
  });
});

describe('a flow’s shape', () => {
  it('counts levels of parents and tasks, the root included', () => {
    const leaf = { task: { type: 'a' } };
    expect(flowShape(leaf)).toEqual({ depth: 0, tasks: 1 });
    expect(flowShape({ task: { type: 'p' }, children: [leaf, leaf] })).toEqual({ depth: 1, tasks: 3 });
    expect(
      flowShape({ task: { type: 'p' }, children: [leaf, { task: { type: 'q' }, children: [leaf, leaf] }] }),
    ).toEqual({ depth: 2, tasks: 5 });
  });
});
