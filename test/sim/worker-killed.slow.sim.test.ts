/**
 * A worker invocation Lambda kills at its timeout with a task in hand (the handler stalled the event
 * loop, so neither heartbeats nor the drain ran): recovery requeues the task once its lease runs out and
 * the next tick's invocation finishes it, once. Then the IAM audit over everything the suite did.
 */
import { describe, expect, it } from 'vitest';
import { grantHasReason } from '../../cdk/grant-reasons.js';
import { readFileSync } from 'node:fs';
import { accessRecords, api, fn, functionDenials, sim, simState, waitFor } from './support/sim-client.js';

describe('a worker invocation killed at its Lambda timeout mid-task', () => {
  it('is recovered after its lease runs out, and the task finishes once', async () => {
    const created = await api('POST', '/tasks', {
      type: 'demo.block',
      payload: { afterMs: 290_000, blockMs: 200_000, attempts: [1] },
    });
    expect(created.status).toBe(201);
    const id = created.body.task.id as string;
    const statuses: string[] = [];
    let first: { leaseOwner?: string; startedAt?: string } | undefined;
    const task = await waitFor(
      'demo.block to finish',
      async () => {
        const t = (await api('GET', `/tasks/${id}`)).body.task;
        if (statuses.at(-1) !== `${t.status}/${t.attempts}`) statuses.push(`${t.status}/${t.attempts}`);
        if (t.status === 'RUNNING' && t.attempts === 1) first ??= t;
        return t.status === 'SUCCESS' || t.status === 'FAILED' ? t : undefined;
      },
      8 * 60_000,
      2_000,
    );
    expect(task).toMatchObject({ status: 'SUCCESS', attempts: 2, result: { blocked: false, attempt: 2 } });
    // Claimed, stalled, requeued by recovery after the lease ran out (QUEUED/1 may last less than a poll
    // when a worker is running), claimed again, finished. The enqueue's kick may start it before the
    // first read: then the first status seen is already the first attempt's.
    expect(['QUEUED/0', 'RUNNING/1']).toContain(statuses[0]);
    expect(statuses).toContain('RUNNING/1');
    expect(statuses.at(-1)).toBe('SUCCESS/2');
    const recoveryLog = readFileSync(
      sim().functions.find((f) => f.logicalId.startsWith('Recovery'))!.logFile,
      'utf8',
    );
    const requeued = recoveryLog
      .split('\n')
      .filter((l) => l.includes('"_aws"'))
      .reduce((n, l) => n + ((JSON.parse(l) as { RecoveredRequeued?: number }).RecoveredRequeued ?? 0), 0);
    expect(requeued).toBeGreaterThanOrEqual(1);
    // The sweep that requeued it started a worker for it (recovery's kick): the second attempt starts
    // within seconds of that sweep (a cold start included), not at the next tick or a poll's safety read.
    const requeuing = recoveryLog
      .split('\n')
      .filter((l) => l.includes('"recovery sweep done"'))
      .map((l) => JSON.parse(l) as { timestamp: string; requeued: number })
      .find((sweep) => sweep.requeued >= 1)!;
    const restartedAfter = Date.parse(task.startedAt) - Date.parse(requeuing.timestamp);
    process.stdout.write(`FIGURE requeued by recovery to attempt 2 started: ${restartedAfter} ms\n`);
    expect(restartedAfter).toBeLessThan(15_000);
    expect(statuses.some((s) => s.startsWith('FAILED'))).toBe(false);

    // The invocation that held attempt 1 was killed at the function's timeout (380 s), its environment with it.
    const state = await waitFor(
      'the Lambda timeout',
      async () => {
        const s = await simState();
        return (fn(s, 'Worker').errors['Sandbox.Timedout'] ?? 0) >= 1 ? s : undefined;
      },
      4 * 60_000,
      2_000,
    );
    expect(fn(state, 'Worker').errors['Sandbox.Timedout']).toBe(1);
    expect(fn(state, 'Recovery').invocations).toBeGreaterThan(0);
    expect(first?.leaseOwner).toBeDefined();
  });
});

describe('IAM in the deployed shape', () => {
  it('every request each function made was allowed by its role', async () => {
    expect(functionDenials(await simState())).toEqual([]);
  });

  it('every action a role grants was used in this run, or its reason is written beside the grant', async () => {
    const state = await simState();
    const used = new Set(
      (await accessRecords())
        .filter((r) => r.allowed)
        .map((r) => `${/:assumed-role\/([^/]+)\//.exec(r.principalArn)?.[1]}|${r.action}`),
    );
    const unexplained: string[] = [];
    for (const grant of state.grants) {
      for (const action of grant.actions) {
        if (!used.has(`${grant.roleName}|${action}`) && !grantHasReason(grant.roleName, action))
          unexplained.push(`${grant.roleName}: ${action}`);
      }
    }
    expect(unexplained).toEqual([]);
  });
});
