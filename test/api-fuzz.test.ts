/**
 * Fuzz of the schedule routes and of every paged route's cursor (test/api.test.ts fuzzes POST /tasks):
 * no input gives a 5xx, a refused request writes nothing, and a schedule PUT accepts can be fired.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { handleApiEvent } from '../shared/api/api-handler.js';
import { demoTasks } from '../tasks/demo.js';
import { ALICE, BOB, apiEvent, type EventSpec } from './support/api-events.js';
import { WRITE_OPERATIONS } from './support/request-meter.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, silentLogger, type WorkerWorld } from './support/worker-world.js';
import { fireTick } from './support/fire-tick.js';

let server: TestDynamo;
let w: WorkerWorld;
beforeAll(async () => {
  server = await startTestDynamo();
  w = await createWorkerWorld(server.endpoint, demoTasks);
});
afterAll(() => server.close());

const call = async (spec: EventSpec) => {
  const res = await handleApiEvent(apiEvent(spec), { ...w, logger: silentLogger() });
  return { status: res.statusCode, body: res.body };
};
/** Write requests sent to DynamoDB so far (the store's client is metered): a refused request must send none. */
const writesSent = () => w.meter.count(...WRITE_OPERATIONS);
const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

const name = fc.oneof(
  {
    arbitrary: fc.constantFrom('nightly', 'a', 'x.y-z_1', 'a'.repeat(64), '__proto__', 'constructor'),
    weight: 3,
  },
  { arbitrary: fc.constantFrom('has space', '..', 'a'.repeat(65), '', 'a/b'), weight: 1 },
  { arbitrary: fc.string({ maxLength: 70 }), weight: 1 },
);
const expression = fc.oneof(
  fc
    .tuple(
      fc.integer({ min: -1, max: 1e6 }),
      fc.constantFrom('minute', 'minutes', 'hour', 'hours', 'day', 'days', 'weeks'),
    )
    .map(([n, u]) => `rate(${n} ${u})`),
  fc
    .tuple(
      ...Array.from({ length: 6 }, () =>
        fc.constantFrom(
          '*',
          '?',
          '0',
          '5',
          '0/15',
          '1-5',
          'L',
          'LW',
          '15W',
          'MON-FRI',
          '6#3',
          '2L',
          '31',
          '2',
          '1999',
          '2100',
          '*/0',
          '60',
          'JAN',
        ),
      ),
    )
    .map((fields) => `cron(${fields.join(' ')})`),
  fc
    .date({ min: new Date('0001-01-01'), max: new Date('9999-12-31'), noInvalidDate: true })
    .map((d) => `at(${d.toISOString().slice(0, 19)})`),
  fc.constantFrom(
    'cron(0 9 ? * MON-FRI *)',
    'rate(1 minute)',
    'at(2030-01-01T00:00:00)',
    'at(2026-02-30T00:00:00)',
    'cron(0 0 31 2 ? *)',
  ),
  fc.string({ maxLength: 300 }),
);
const timezone = fc.oneof(
  fc.constantFrom(
    'UTC',
    'Europe/Berlin',
    'europe/berlin',
    'US/Pacific',
    'EST',
    'PST',
    'Mars/Olympus',
    '',
    'Etc/GMT+5',
    'Asia/Kolkata',
    'x'.repeat(65),
  ),
  fc.string({ maxLength: 20 }),
);
const payload = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.integer({ min: 60, max: 3_000 }).map((d) => JSON.parse(`${'['.repeat(d)}${']'.repeat(d)}`) as unknown),
);
const task = fc.record(
  {
    type: fc.oneof(fc.constantFrom('demo.echo', 'demo.sleep', 'demo.fail', 'nope', ''), fc.string()),
    payload,
    priority: fc.oneof(fc.integer({ min: -2000, max: 2000 }), fc.double(), fc.string()),
    maxAttempts: fc.oneof(fc.integer({ min: -1, max: 200 }), fc.constant(null)),
    extra: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);
const validish = fc.record(
  {
    expression: fc.constantFrom(
      'rate(1 hour)',
      'rate(5 minutes)',
      'cron(0 9 ? * MON-FRI *)',
      'cron(0/15 * * * ? *)',
      'at(2030-01-01T00:00:00)',
    ),
    timezone: fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata'),
    task: fc.record(
      { type: fc.constant('demo.echo'), payload: fc.jsonValue({ maxDepth: 5 }) },
      { requiredKeys: ['type'] },
    ),
    enabled: fc.boolean(),
  },
  { requiredKeys: ['expression', 'task'] },
);
const scheduleBody = fc.oneof(
  { arbitrary: validish.map((b) => JSON.stringify(b)), weight: 3 },
  fc
    .record(
      { expression, timezone, task, enabled: fc.oneof(fc.boolean(), fc.string()) },
      { requiredKeys: ['expression', 'task'] },
    )
    .map((b) => JSON.stringify(b)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string(),
);
/** Forged and random cursors: empty, oversized and wrong-type keys, other partitions, not JSON, not base64url. */
const cursor = fc.oneof(
  fc
    .record(
      {
        pk: fc.oneof(fc.constantFrom('', 'TASK#a', 'SCHEDULES', 'TASK#' + 'x'.repeat(2100)), fc.string()),
        sk: fc.oneof(fc.constantFrom('', 'TASK', 'nightly', 'x'.repeat(1100)), fc.string(), fc.integer()),
        ownerPk: fc.constantFrom(ALICE, `SCHEDULES#${ALICE}`, BOB, ''),
        ownerSk: fc.oneof(
          fc.constantFrom('', '1#a', '9999999999999#zzz', 'nightly', 'x'.repeat(1100)),
          fc.string(),
        ),
      },
      { requiredKeys: [] },
    )
    .map(b64),
  fc.jsonValue().map(b64),
  fc.string({ maxLength: 3000 }).map(b64),
  fc.string({ maxLength: 100 }),
);
const limit = fc.oneof(
  fc.constantFrom('1', '2', '100', '0', '101', '-1', '1.5', 'ten', ''),
  fc.string({ maxLength: 5 }),
);
const caller = fc.constantFrom(ALICE, BOB);
/** A schedule's path, its name sent encoded (as clients should) or raw (as some do). */
const schedulePath = fc
  .tuple(name, fc.boolean())
  .map(([n, encode]) => `/schedules/${encode ? encodeURIComponent(n) : n}`);

const request: fc.Arbitrary<EventSpec> = fc.oneof(
  {
    arbitrary: fc.record({
      method: fc.constant('PUT'),
      path: schedulePath,
      rawBody: scheduleBody,
      caller,
      contentType: fc.constantFrom('application/json', 'application/json', 'application/json', 'text/plain'),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({ method: fc.constantFrom('GET', 'DELETE'), path: schedulePath, caller }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      method: fc.constant('GET'),
      path: schedulePath.map((p) => `${p}/fires`),
      caller,
      query: fc.record({ limit, x: fc.string() }, { requiredKeys: [] }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      method: fc.constant('GET'),
      path: fc.constantFrom('/schedules', '/tasks'),
      caller,
      query: fc.record({ cursor, limit }, { requiredKeys: [] }),
    }),
    weight: 2,
  },
);

describe('fuzz: schedules and cursors', () => {
  it(
    '300 random requests: never a 5xx, a refused one writes nothing, and a schedule PUT accepts fires',
    { timeout: 60_000 },
    async () => {
      // A few of the caller's own tasks and schedules, so cursors have pages to move in and names to meet.
      for (let i = 0; i < 3; i++)
        await call({ method: 'POST', path: '/tasks', body: { type: 'demo.echo', payload: i } });
      for (const n of ['nightly', 'a'])
        await call({
          method: 'PUT',
          path: `/schedules/${n}`,
          body: { expression: 'rate(1 hour)', task: { type: 'demo.echo' } },
        });
      const statuses = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(request, async (spec) => {
          const before = writesSent();
          const res = await call(spec);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          expect(
            res.status,
            `${spec.method} ${spec.path} ${JSON.stringify(spec.query ?? spec.rawBody ?? '').slice(0, 300)}: ${res.body.slice(0, 300)}`,
          ).toBeLessThan(500);
          if (res.status >= 400) expect(writesSent()).toBe(before);
          if (spec.method === 'PUT' && res.status < 300) {
            // What PUT accepted must not fail at its ticks (a poison definition).
            const schedule = JSON.parse(res.body).schedule as { name: string; enabled: boolean };
            const outcome = await fireTick(w.schedules, spec.caller ?? ALICE, schedule.name, Date.now());
            expect(outcome.fired || !schedule.enabled).toBe(true);
          }
        }),
        { numRuns: 300, seed: 20261201 },
      );
      // The fuzz reached past validation too, not only refusals.
      expect([...statuses.entries()].filter(([s]) => s < 300).reduce((n, [, c]) => n + c, 0)).toBeGreaterThan(
        30,
      );
      expect(statuses.get(400) ?? 0).toBeGreaterThan(100);
    },
  );
});
