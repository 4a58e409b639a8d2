import { afterAll, describe, expect, it } from 'vitest';
import { startTestDynamo } from './support/test-dynamo.js';
import { http, startStackProcess, waitFor, type StackProcess } from './support/stack-process.js';

const started: StackProcess[] = [];
afterAll(() => {
  for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
});

describe('a schedule on three local stacks sharing one table', () => {
  it('every stack fires every tick, and each tick makes exactly one task', { timeout: 200_000 }, async () => {
    const dynamo = await startTestDynamo();
    try {
      const env = {
        LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint,
        LEASEHOLD_TABLE: 'scheduled',
        POWERTOOLS_LOG_LEVEL: 'INFO',
      };
      const stacks = await Promise.all([
        startStackProcess(['--api'], env),
        startStackProcess(['--worker'], env),
        startStackProcess(['--recovery'], env),
      ]);
      started.push(...stacks);
      const url = stacks[0]!.url!;
      const put = await http(url, 'PUT', '/schedules/every-minute', {
        expression: 'cron(* * * * ? *)',
        task: { type: 'demo.echo', payload: { from: 'schedule' } },
      });
      expect(put.status).toBe(201);

      const firesNow = async () =>
        (await http(url, 'GET', '/schedules/every-minute/fires')).body.fires as {
          scheduledTime: string;
          taskId: string;
        }[];
      // Two minute boundaries: up to two minutes of waiting.
      await waitFor(async () => ((await firesNow()).length >= 2 ? true : undefined), 150_000, 'two ticks');
      // Every stack fires each tick (their logs say so); the tick's key makes all but the first a no-op.
      // A stack's log line can come seconds after another stack recorded the tick: under load its
      // one-second tick loop runs behind, or its delivery failed and is retried 5 s later. Wait for it
      // (read at one instant, CI once found a stack that had not logged yet).
      const firedBy = () => stacks.map((s) => (s.output().match(/"message":"schedule fired"/g) ?? []).length);
      await waitFor(
        async () => (firedBy().every((n) => n >= 1) ? true : undefined),
        20_000,
        'a fire logged by every stack',
      ).catch((error: Error) => {
        const lines = stacks.map((st) =>
          st
            .output()
            .split('\n')
            .filter((l) => l.includes('schedule'))
            .slice(-5),
        );
        throw new Error(
          `${error.message}: fires logged ${JSON.stringify(firedBy())}; ${JSON.stringify(lines)}`,
        );
      });
      const fires = await firesNow();
      const tasks = (await http(url, 'GET', '/tasks?type=demo.echo&limit=100')).body.tasks as {
        id: string;
        status: string;
      }[];
      expect(new Set(tasks.map((t) => t.id))).toEqual(new Set(fires.map((f) => f.taskId)));
      expect(tasks).toHaveLength(fires.length);
      expect(new Set(fires.map((f) => f.scheduledTime)).size).toBe(fires.length);
      expect(firedBy().every((n) => n >= 1)).toBe(true);
      expect(
        stacks.map((s) => (s.output().match(/"created":true/g) ?? []).length).reduce((a, b) => a + b, 0),
      ).toBe(fires.length);
      for (const s of stacks) s.child.kill('SIGTERM');
      expect(await Promise.all(stacks.map((s) => s.exited))).toEqual([0, 0, 0]);
    } finally {
      await dynamo.close();
    }
  });
});
