/**
 * The local ticker fires each tick on its own. A schedule whose fire fails (whoever
 * owns it) does not stop the others, the window moves on, and a failed tick is retried a bounded
 * number of times, not fired again every second for ever.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { handleApiEvent } from '../shared/api/api-handler.js';
import {
  LOCAL_FIRE_ATTEMPTS,
  LOCAL_RETRY_DELAYS_MS,
  LocalScheduleTicker,
} from '../shared/schedules/local-ticker.js';
import { ScheduleService } from '../shared/schedules/schedule-service.js';
import { definitionKey, ScheduleStore } from '../shared/schedules/schedule-store.js';
import { localSync } from '../shared/schedules/scheduler-sync.js';
import { defineTask, type TaskDefinition } from '../shared/tasks/define.js';
import { demoTasks } from '../tasks/demo.js';
import { TaskRegistry } from '../shared/tasks/registry.js';
import { TaskSubmitter } from '../shared/tasks/task-submitter.js';
import { ALICE, apiEvent, type EventSpec } from './support/api-events.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore } from './support/test-store.js';
import { FAST_LEASES, silentLogger } from './support/worker-world.js';

const MALLORY = 'arn:aws:iam::123456789012:user/mallory';
let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

/** A task type whose payload schema a later deploy changed: definitions saved before fail at every fire. */
const strictThen = defineTask({
  name: 'report.strict',
  schema: z.object({ n: z.number() }),
  handler: () => undefined,
});
const strictNow = defineTask({
  name: 'report.strict',
  schema: z.object({ n: z.string() }),
  handler: () => undefined,
});

/** Schedules on a manual clock; `before` saves definitions as the old deploy did, `schedules` fires as the new one does. */
async function tickerWorld() {
  const t = await createTestStore(server.endpoint, FAST_LEASES);
  const service = (definitions: TaskDefinition[]) => {
    const registry = new TaskRegistry(definitions, t.config);
    const submitter = new TaskSubmitter(t.store, registry, t.config);
    return {
      submitter,
      schedules: new ScheduleService(new ScheduleStore(t.store.ctx), localSync, submitter, t.clock),
    };
  };
  const before = service([...demoTasks, strictThen]);
  const now = service([...demoTasks, strictNow]);
  const fired = new Map<string, number>();
  const fire = now.schedules.fire.bind(now.schedules);
  now.schedules.fire = async (tick) => {
    fired.set(tick.name, (fired.get(tick.name) ?? 0) + 1);
    return fire(tick);
  };
  const ticker = new LocalScheduleTicker(now.schedules, t.clock, silentLogger());
  const call = async (spec: EventSpec) => {
    const res = await handleApiEvent(apiEvent(spec), {
      store: t.store,
      submitter: now.submitter,
      schedules: now.schedules,
      config: t.config,
      logger: silentLogger(),
    });
    return JSON.parse(res.body) as Record<string, any>;
  };
  return {
    ...t,
    before: before.schedules,
    schedules: now.schedules,
    submitter: now.submitter,
    ticker,
    fired,
    call,
  };
}

describe('the local ticker isolates a failing schedule', () => {
  it('a schedule whose fire always fails does not stop later ones; each tick is fired once and recorded as failed', async () => {
    const w = await tickerWorld();
    const start = w.clock.now();
    // "aaa-" sorts first: the old ticker gave up its whole window at the first throw.
    await w.before.put('aaa-poison', MALLORY, {
      expression: 'rate(1 minute)',
      task: { type: 'report.strict', payload: { n: 1 } },
    });
    await w.before.put('zzz-alice', ALICE, {
      expression: 'rate(1 minute)',
      task: { type: 'demo.echo', payload: 'alice job' },
    });
    for (let minute = 1; minute <= 3; minute++) {
      w.clock.advance(60_000);
      await w.ticker.tick();
    }
    // The window moved on: looking again at the same moment fires nothing more.
    await w.ticker.tick();
    const ticks = [3, 2, 1].map((m) => start + m * 60_000);
    const alice = (await w.schedules.fires('zzz-alice', ALICE)).fires;
    expect(alice.map((f) => f.scheduledTime)).toEqual(ticks);
    expect(alice.every((f) => f.taskId !== undefined)).toBe(true);
    // A list shows no payloads: each fire's task is read by id.
    for (const fire of alice)
      expect((await w.call({ method: 'GET', path: `/tasks/${fire.taskId!}` })).task.payload).toBe(
        'alice job',
      );
    expect(new Set(alice.map((f) => f.taskId)).size).toBe(3);
    // The poison's ticks: each delivered once (bad input fails the same way every time), and its failure recorded.
    const poison = (await w.schedules.fires('aaa-poison', MALLORY)).fires;
    expect(poison.map((f) => f.scheduledTime)).toEqual(ticks);
    expect(poison.every((f) => f.taskId === undefined && /payload\.n/.test(f.error ?? ''))).toBe(true);
    expect(Object.fromEntries(w.fired)).toEqual({ 'aaa-poison': 3, 'zzz-alice': 3 });
    expect(w.ticker.pendingRetries).toBe(0);
  });

  it(`a tick whose fire fails for a passing reason is delivered again later, at most ${LOCAL_FIRE_ATTEMPTS} times in all`, async () => {
    const w = await tickerWorld();
    const enqueue = w.submitter.enqueue.bind(w.submitter);
    let throttled = Number.POSITIVE_INFINITY;
    w.submitter.enqueue = async (input) => {
      if (input.owner === MALLORY && throttled-- > 0)
        throw Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
      return enqueue(input);
    };
    await w.schedules.put('flaky', MALLORY, { expression: 'rate(1 hour)', task: { type: 'demo.echo' } });
    await w.schedules.put('steady', ALICE, { expression: 'rate(1 hour)', task: { type: 'demo.echo' } });
    const tick = w.clock.now() + 3_600_000;
    w.clock.set(tick);
    await w.ticker.tick();
    expect(Object.fromEntries(w.fired)).toEqual({ flaky: 1, steady: 1 });
    // Not again every second: only once its retry delay has passed.
    for (let s = 1; s < LOCAL_RETRY_DELAYS_MS[0] / 1000; s++) {
      w.clock.advance(1_000);
      await w.ticker.tick();
    }
    expect(w.fired.get('flaky')).toBe(1);
    w.clock.advance(1_000);
    await w.ticker.tick();
    expect(w.fired.get('flaky')).toBe(2);
    w.clock.advance(LOCAL_RETRY_DELAYS_MS[1]);
    await w.ticker.tick();
    expect(w.fired.get('flaky')).toBe(LOCAL_FIRE_ATTEMPTS);
    expect(w.ticker.pendingRetries).toBe(0);
    w.clock.advance(600_000);
    await w.ticker.tick();
    expect(Object.fromEntries(w.fired)).toEqual({ flaky: LOCAL_FIRE_ATTEMPTS, steady: 1 });
    expect((await w.schedules.fires('flaky', MALLORY)).fires).toEqual([
      expect.objectContaining({ scheduledTime: tick, error: 'ThrottlingException: slow down' }),
    ]);
  });

  it('a retry that succeeds replaces the failure on the tick’s record with its task', async () => {
    const w = await tickerWorld();
    const enqueue = w.submitter.enqueue.bind(w.submitter);
    let throttled = 1;
    w.submitter.enqueue = async (input) => {
      if (throttled-- > 0) throw Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
      return enqueue(input);
    };
    await w.schedules.put('once-flaky', ALICE, { expression: 'rate(1 hour)', task: { type: 'demo.echo' } });
    const tick = w.clock.now() + 3_600_000;
    w.clock.set(tick);
    await w.ticker.tick();
    expect((await w.schedules.fires('once-flaky', ALICE)).fires[0]).toMatchObject({
      error: 'ThrottlingException: slow down',
    });
    w.clock.advance(LOCAL_RETRY_DELAYS_MS[0]);
    await w.ticker.tick();
    const [fire] = (await w.schedules.fires('once-flaky', ALICE)).fires;
    expect(fire).toEqual({
      scheduledTime: tick,
      firedAt: w.clock.now(),
      taskId: expect.stringMatching(/^idem-/),
    });
    expect(w.ticker.pendingRetries).toBe(0);
  });

  it('a definition whose ticks cannot be computed is skipped; the others still fire', async () => {
    const w = await tickerWorld();
    await w.schedules.put('broken', MALLORY, { expression: 'rate(1 minute)', task: { type: 'demo.echo' } });
    await w.schedules.put('fine', ALICE, { expression: 'rate(1 minute)', task: { type: 'demo.echo' } });
    // As if written by another version with a zone this Node does not know.
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    await w.doc.send(
      new UpdateCommand({
        TableName: w.config.tableName,
        Key: definitionKey(MALLORY, 'broken'),
        UpdateExpression: 'SET #z = :z',
        ExpressionAttributeNames: { '#z': 'timezone' },
        ExpressionAttributeValues: { ':z': 'Mars/Olympus' },
      }),
    );
    w.clock.advance(60_000);
    await w.ticker.tick();
    expect(Object.fromEntries(w.fired)).toEqual({ fine: 1 });
  });
});
