import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createClient } from 'leasehold/client';
import { http, startStackProcess, waitFor, type StackProcess } from './support/stack-process.js';

let dynamo: TestDynamo;
const started: StackProcess[] = [];
const dirs: string[] = [];
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  await dynamo.close();
});

const track = (p: StackProcess) => (started.push(p), p);
const statusOf = async (url: string, id: string) => (await http(url, 'GET', `/tasks/${id}`)).body.task;

describe('npm start: the local stack as a process', () => {
  it(
    'runs a task to SUCCESS; after SIGKILL mid-task and a restart on the same data, the task still finishes; SIGINT exits 0 within the drain bound',
    { timeout: 90_000 },
    async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'leasehold-'));
      dirs.push(dataDir);
      // On dynalite, `npm start` as a user runs it: its embedded dynalite keeps the data in dataDir. On
      // DynamoDB Local, the stacks share the file's server instead, which outlives each of them the same way.
      // Leases of 4 s (1 s heartbeats), not the fast 1.5 s: under load a 1.5 s lease of the restarted
      // stack could run out between heartbeats and the task would count a third attempt.
      const leases = {
        LEASEHOLD_LEASE_TIMEOUT_MS: '4000',
        LEASEHOLD_HEARTBEAT_INTERVAL_MS: '1000',
        LEASEHOLD_REQUEST_DEADLINE_MS: '400',
        LEASEHOLD_CLOCK_SKEW_MS: '200',
      };
      const env = {
        LEASEHOLD_DATA_DIR: dataDir,
        ...leases,
        ...(dynamo.backend === 'dynalite'
          ? {}
          : { LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint, LEASEHOLD_TABLE: 'restarted-tasks' }),
      };
      const first = track(await startStackProcess([], env));
      expect(first.output()).toContain('curl -s -X POST');
      const url = first.url!;

      const echo = await http(url, 'POST', '/tasks', { type: 'demo.echo', payload: { hello: 'world' } });
      expect(echo.status).toBe(201);
      const done = await waitFor(
        async () => {
          const t = await statusOf(url, echo.body.task.id);
          return t.status === 'SUCCESS' ? t : undefined;
        },
        10_000,
        'demo.echo to succeed',
      );
      expect(done.result).toEqual({ hello: 'world' });

      const sleeper = (await http(url, 'POST', '/tasks', { type: 'demo.sleep', payload: { ms: 3_000 } })).body
        .task.id as string;
      await waitFor(
        async () => ((await statusOf(url, sleeper)).status === 'RUNNING' ? true : undefined),
        10_000,
        'demo.sleep to start',
      );
      first.child.kill('SIGKILL');
      await first.exited;

      const second = track(await startStackProcess([], env));
      const finished = await waitFor(
        async () => {
          const t = await statusOf(second.url!, sleeper);
          return t.status === 'SUCCESS' ? t : undefined;
        },
        30_000,
        'the interrupted task to finish after the restart',
      );
      expect(finished.attempts).toBe(2);
      // The first task survived the crash too: its data outlives the process.
      expect((await statusOf(second.url!, echo.body.task.id)).status).toBe('SUCCESS');

      // Ctrl-C while a task runs: the stack drains (the task goes back to the queue unspent) and exits 0.
      const interrupted = (
        await http(second.url!, 'POST', '/tasks', { type: 'demo.sleep', payload: { ms: 5_000 } })
      ).body.task.id as string;
      await waitFor(
        async () => ((await statusOf(second.url!, interrupted)).status === 'RUNNING' ? true : undefined),
        10_000,
        'the last task to start',
      );
      const signalledAt = Date.now();
      second.child.kill('SIGINT');
      expect(await second.exited).toBe(0);
      // Well before the handler's 5 s would end: the drain does not wait for it (4 s leaves a loaded
      // machine time to release the lease, flush, and close the API and its DynamoDB).
      expect(Date.now() - signalledAt).toBeLessThan(4_000);
      expect(second.output()).toContain('SIGINT: draining');

      const third = track(await startStackProcess(['--api'], env));
      expect(await statusOf(third.url!, interrupted)).toMatchObject({ status: 'QUEUED', attempts: 0 });
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
    },
  );

  it(
    'two --worker processes and one --api --recovery process on one external DynamoDB run 200 tasks to SUCCESS exactly once each',
    { timeout: 90_000 },
    async () => {
      // Deadlines a loaded two-core machine keeps (250 ms ones, three processes and dynalite on two
      // cores, aborted an outcome write now and then, and its task waited for a recovery), and recovery
      // running as it always does in the deployed shape.
      const env = {
        LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint,
        LEASEHOLD_TABLE: 'shared-tasks',
        LEASEHOLD_WORKER_CONCURRENCY: '16',
        LEASEHOLD_LEASE_TIMEOUT_MS: '6000',
        LEASEHOLD_HEARTBEAT_INTERVAL_MS: '2000',
        LEASEHOLD_REQUEST_DEADLINE_MS: '1500',
        LEASEHOLD_DRAIN_MARGIN_MS: '4000',
      };
      const api = track(await startStackProcess(['--api', '--recovery'], env));
      const workers = [
        track(await startStackProcess(['--worker'], env)),
        track(await startStackProcess(['--worker'], env)),
      ];
      expect(api.output()).not.toContain('worker ');
      // Through the client, as a user would: under CI load a put can outlive its deadline (503
      // WRITE_OUTCOME_UNKNOWN), which the client resends under the same idempotency key.
      const client = createClient({ url: api.url! });
      const ids: string[] = [];
      for (let i = 0; i < 200; i += 20) {
        const batch = await Promise.all(
          Array.from({ length: 20 }, (_, j) => client.enqueue('demo.echo', { n: i + j })),
        );
        ids.push(...batch.map((r) => r.task.id as string));
      }
      let last = '';
      const all = await waitFor(
        async () => {
          const tasks: { id: string; status: string; attempts: number; result: unknown; payload: unknown }[] =
            [];
          let cursor: string | undefined;
          do {
            const page = await http(api.url!, 'GET', `/tasks?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
            tasks.push(...page.body.tasks);
            cursor = page.body.nextCursor;
          } while (cursor);
          const open = tasks.filter((t) => t.status !== 'SUCCESS');
          last = `${tasks.length} listed, ${tasks.length - open.length} SUCCESS; not yet: ${JSON.stringify(open.slice(0, 3))}`;
          return tasks.length === 200 && tasks.every((t) => t.status === 'SUCCESS') ? tasks : undefined;
        },
        20_000,
        '200 tasks to succeed',
      ).catch((e: Error) => {
        throw new Error(
          `${e.message} (${last}); worker output:\n${workers
            .map((w) => w.output())
            .join('\n')
            .slice(-3000)}`,
        );
      });
      expect(new Set(all.map((t) => t.id))).toEqual(new Set(ids));
      // One claim each: a second claim would have counted a second attempt.
      expect(
        all.every((t) => t.attempts === 1 && JSON.stringify(t.result) === JSON.stringify(t.payload)),
      ).toBe(true);
      for (const p of [api, ...workers]) p.child.kill('SIGTERM');
      expect(await Promise.all([api, ...workers].map((p) => p.exited))).toEqual([0, 0, 0]);
    },
  );
});
