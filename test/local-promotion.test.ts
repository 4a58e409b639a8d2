/**
 * The local stack's one owner of promotion: its worker's timekeeper, not the recovery sweep (which runs
 * once a minute by default and is off here). A task this process delays is promoted at its due time;
 * one another process delays is found by the timekeeper's next read of the delay partitions.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type LocalStack } from '../tools/local/stack.js';
import type { Task } from '../shared/task-model.js';
import { TUNING } from '../shared/tuning.js';
import { demoTasks } from '../tasks/demo.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { silentLogger } from './support/worker-world.js';

let dynamo: TestDynamo;
const stacks: LocalStack[] = [];
const dirs: string[] = [];

/** A stack on the shared table with the default poll (1 s) and recovery interval (a minute). */
async function stack(roles: { worker: boolean }): Promise<LocalStack> {
  const dataDir = await mkdtemp(join(tmpdir(), 'leasehold-promotion-'));
  dirs.push(dataDir);
  const s = await startStack({
    env: {
      LEASEHOLD_DYNAMODB_ENDPOINT: dynamo.endpoint,
      LEASEHOLD_TABLE: 'local-promotion',
      LEASEHOLD_DATA_DIR: dataDir,
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
    roles: { api: false, worker: roles.worker, recovery: false },
    definitions: demoTasks,
    logger: silentLogger(),
  });
  stacks.push(s);
  return s;
}

async function startedAt(s: LocalStack, id: string, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const task: Task = await s.app.store.get({ id });
    if (task.startedAt !== undefined) return task.startedAt;
    if (Date.now() > until)
      throw new Error(`task ${id} did not start within ${timeoutMs} ms: ${task.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Enqueues a task delayed by 1.5 s through `via`; how long after its due time it started on `runner`. */
async function startLateness(via: LocalStack, runner: LocalStack): Promise<number> {
  const { task } = await via.app.store.enqueue({
    type: 'demo.echo',
    owner: 'local-promotion',
    delayMs: 1_500,
  });
  return (await startedAt(runner, task.id, 10_000)) - task.availableAt;
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  for (const s of stacks) await s.stop();
  await dynamo?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('local stack: the timekeeper promotes delayed tasks (recovery off)', () => {
  it('a task this process delays starts at its due time (told, no read), one delayed elsewhere within a refresh', async () => {
    const worker = await stack({ worker: true });
    const elsewhere = await stack({ worker: false });
    expect(worker.app.config.recoveryIntervalMs).toBe(60_000);

    const ownStarted = await startLateness(worker, worker);
    const otherStarted = await startLateness(elsewhere, worker);

    console.log(
      `local promotion: own delayed task started ${ownStarted} ms after due, another process's ${otherStarted} ms`,
    );
    expect(ownStarted).toBeGreaterThanOrEqual(0);
    expect(ownStarted).toBeLessThan(500);
    expect(otherStarted).toBeGreaterThanOrEqual(0);
    // Found by the next read (every second), then promoted at its due time or at once if past it.
    expect(otherStarted).toBeLessThan(TUNING.timekeeper.minRefreshMs + 1_000);
  });
});
