/**
 * A renewal round that fails as a whole. The worker used to log "renewal round
 * failed" and nothing else: no handler was aborted when its lease ran out, so it kept running beside
 * the task's next holder. Each lease of such a round must be treated as not renewed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { TaskStore } from '../shared/store/task-store.js';
import { defineTask } from '../shared/tasks/define.js';
import { TaskAbortedError } from '../shared/worker/outcome.js';
import { MemoryHistory } from './chaos/history.js';
import { RecordingMetrics } from '../shared/metrics.js';
import { TaskSubmitter } from '../shared/tasks/task-submitter.js';
import { ManualClock } from './support/manual-clock.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, sleep, untilAborted } from './support/worker-world.js';

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const broken: [string, TaskStore['renew']][] = [
  ['throws', async () => Promise.reject(new Error('renewal store down'))],
  ['answers for no lease', async () => []],
];

/** Waits until `done()` holds, at most `ms`: the assertions after it say what was missing. */
async function waitFor(done: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await sleep(10);
}

describe('a renewal round that fails as a whole', () => {
  it.each(broken)(
    '(%s) still aborts each handler once its lease has run out by the worker clock',
    async (_, renew) => {
      // Lease time is the test's own clock: it moves only when the test moves it.
      const clock = new ManualClock(Date.now());
      const started = new Set<string>();
      const aborts: { task: string; reason: unknown; at: number }[] = [];
      const w = await createWorkerWorld(server.endpoint, [
        defineTask({
          name: 'waits',
          schema: z.unknown(),
          maxAttempts: 1,
          handler: async (_payload, ctx) => {
            started.add(ctx.taskId);
            try {
              await untilAborted(ctx.signal);
            } catch (reason) {
              aborts.push({
                task: ctx.taskId,
                reason: reason instanceof TaskAbortedError ? reason.reason : reason,
                at: clock.now(),
              });
              throw reason;
            }
          },
        }),
      ]);
      const store = w.peer({ clock });
      store.renew = renew;
      const history = new MemoryHistory('w1');
      const metrics = new RecordingMetrics();
      const worker = w.worker('w1', { store, metrics, clock, history });
      const queue = new TaskSubmitter(store, w.registry, w.config);
      const tasks = [
        (await queue.enqueue({ type: 'waits', owner: 'o', payload: 1 })).task,
        (await queue.enqueue({ type: 'waits', owner: 'o', payload: 2 })).task,
      ];
      const stop = new AbortController();
      const run = worker.run({ stop: stop.signal });
      await waitFor(() => started.size === 2);
      // Rounds keep failing, but the leases have not run out: nobody is aborted yet.
      await waitFor(() => history.events.filter((e) => e.ev === 'renew').length >= 4);
      expect(aborts).toEqual([]);
      clock.advance(w.config.leaseTimeoutMs);
      // Before the fix only the execution timeout (10 s) stopped these handlers.
      await waitFor(() => aborts.length === 2);
      await waitFor(() => metrics.get('TasksFailed') === 2);
      stop.abort();
      await run;

      expect(aborts.map((a) => a.reason)).toEqual(['lease-lost', 'lease-lost']);
      for (const abort of aborts) {
        const claim = history.events.find((e) => e.ev === 'claim' && e.task === abort.task);
        // Not before the lease ran out by the worker's own clock.
        expect(abort.at).toBeGreaterThanOrEqual((claim as { leaseUntil: number }).leaseUntil);
      }
      expect(metrics.get('LeasesLost')).toBe(2);
      expect(metrics.get('LeaseRenewalsOk')).toBe(0);
      for (const task of tasks)
        expect(await w.store.get({ id: task.id })).toMatchObject({
          status: 'FAILED',
          error: 'TaskAbortedError: task aborted: lease-lost',
        });
    },
  );
});
