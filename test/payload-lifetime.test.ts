/**
 * A payload kept apart lives as long as its task can still run (review 2, finding 1; repro/payload-ttl.ts):
 * the rule with a fixed clock, then on dynalite with the table's TTL done by hand as DynamoDB would
 * (every item whose expiresAt has passed deleted): a FAILED task retried through the API after
 * maxWaitDays + retentionDays - 1 days runs with its payload; a retry whose payload is gone is a 409
 * that changes nothing; a backoff past the payload's TTL moves it.
 */
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyExpiry } from '../shared/store/body-layout.js';
import { PayloadMissingError, payloadExtension } from '../shared/store/payload-lifetime.js';
import { TTL_ATTRIBUTE } from '../shared/table-layout.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createTestStore, type TestStore } from './support/test-store.js';

const DAY = 86_400_000;
const CONFIG = { maxWaitDays: 30, retentionDays: 30 };

describe('payloadExtension (pure)', () => {
  const now = Date.UTC(2026, 11, 4);
  it('moves the TTL only when the new due time needs it, and never for an inline payload', () => {
    const needed = bodyExpiry(now + 10 * DAY, CONFIG);
    expect(
      payloadExtension({ id: 't', payloadBytes: 500, payloadUntil: needed - 1 }, now, now + 10 * DAY, CONFIG),
    ).toBe(needed);
    expect(
      payloadExtension({ id: 't', payloadBytes: 500, payloadUntil: needed }, now, now + 10 * DAY, CONFIG),
    ).toBeUndefined();
    // A due time in the past counts from now.
    expect(payloadExtension({ id: 't', payloadBytes: 500, payloadUntil: 0 }, now, now - DAY, CONFIG)).toBe(
      bodyExpiry(now, CONFIG),
    );
    // Written before payloadUntil existed: extended once.
    expect(payloadExtension({ id: 't', payloadBytes: 500 }, now, now, CONFIG)).toBe(bodyExpiry(now, CONFIG));
    expect(payloadExtension({ id: 't' }, now, now + 400 * DAY, CONFIG)).toBeUndefined();
  });
});

let server: TestDynamo;
beforeAll(async () => {
  server = await startTestDynamo();
});
afterAll(() => server.close());

const TYPE = 'invoice.send';
const OWNER = 'arn:aws:iam::123456789012:role/billing';
const payload = { invoice: 'INV-2026-0042', lines: 'x'.repeat(400) };

/** DynamoDB's TTL, done now: every item whose expiresAt has passed is deleted. */
async function ttlSweep(s: TestStore): Promise<number> {
  const expired = (await s.scanAll()).filter(
    (i) => typeof i[TTL_ATTRIBUTE] === 'number' && (i[TTL_ATTRIBUTE] as number) * 1000 <= s.clock.now(),
  );
  for (const i of expired)
    await s.doc.send(new DeleteCommand({ TableName: s.config.tableName, Key: { pk: i.pk, sk: i.sk } }));
  return expired.length;
}

const payloadItem = async (s: TestStore, id: string) =>
  (await s.scanAll()).find((i) => i.pk === `TASK#${id}` && String(i.sk).startsWith('PAYLOAD'));

async function failedTask(s: TestStore): Promise<string> {
  const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload, maxAttempts: 1 });
  const [claimed] = (await s.store.claim({ workerId: 'w', types: [TYPE], max: 1 })).claimed;
  await s.store.fail({ lease: claimed!.lease, error: 'smtp down', retryable: false });
  return task.id;
}

describe('a payload kept apart outlives every run its task may still have', () => {
  it('a FAILED task retried every 25 days, past maxWaitDays + retentionDays - 1 since enqueue, runs with its payload each time', async () => {
    const s = await createTestStore(server.endpoint, CONFIG);
    const enqueuedAt = s.clock.now();
    const id = await failedTask(s);
    // The review's case: with the TTL set at enqueue (day 60), the third retry (day 75) failed PAYLOAD_MISSING.
    for (const retry of [1, 2, 3, 4]) {
      s.clock.advance(25 * DAY);
      await ttlSweep(s);
      expect((await s.store.retry({ id, owner: OWNER })).status).toBe('QUEUED');
      // Its payload item now lives a full wait and retention from here.
      expect((await payloadItem(s, id))?.[TTL_ATTRIBUTE]).toBe(bodyExpiry(s.clock.now(), CONFIG));
      const [claimed] = (await s.store.claim({ workerId: 'w', types: [TYPE], max: 1 })).claimed;
      expect(claimed?.task.payload, `retry ${retry}`).toEqual(payload);
      await s.store.fail({ lease: claimed!.lease, error: 'smtp down', retryable: false });
    }
    expect(s.clock.now() - enqueuedAt).toBeGreaterThan((CONFIG.maxWaitDays + CONFIG.retentionDays - 1) * DAY);
  });

  it('a retry whose payload is gone is refused (409 PAYLOAD_MISSING) and leaves the task as it was', async () => {
    const s = await createTestStore(server.endpoint, CONFIG);
    const id = await failedTask(s);
    // A task written before payloadUntil existed, whose payload's TTL (set at its enqueue) ran out.
    await s.doc.send(
      new UpdateCommand({
        TableName: s.config.tableName,
        Key: { pk: `TASK#${id}`, sk: 'TASK' },
        UpdateExpression: 'REMOVE payloadUntil',
      }),
    );
    const item = await payloadItem(s, id);
    await s.doc.send(
      new DeleteCommand({ TableName: s.config.tableName, Key: { pk: item!.pk, sk: item!.sk } }),
    );
    const refused = await s.store.retry({ id, owner: OWNER }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PayloadMissingError);
    expect(refused).toMatchObject({ code: 'PAYLOAD_MISSING', status: 409 });
    expect((await s.store.get({ id, owner: OWNER })).status).toBe('FAILED');
    // No empty payload item was made by the refused extension.
    expect(await payloadItem(s, id)).toBeUndefined();
  });

  it('a backoff that makes the task due past its payload TTL moves it first', async () => {
    const s = await createTestStore(server.endpoint, CONFIG);
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload, maxAttempts: 3 });
    const before = (await payloadItem(s, task.id))?.[TTL_ATTRIBUTE] as number;
    const [claimed] = (await s.store.claim({ workerId: 'w', types: [TYPE], max: 1 })).claimed;
    const backoff = 7 * DAY;
    await s.store.fail({
      lease: claimed!.lease,
      error: 'later',
      backoff: { baseMs: backoff, maxMs: backoff },
    });
    const after = (await payloadItem(s, task.id))?.[TTL_ATTRIBUTE] as number;
    const due = (await s.store.get({ id: task.id, owner: OWNER })).availableAt;
    expect(after).toBe(bodyExpiry(due, CONFIG));
    expect(after).toBeGreaterThan(before);
  });

  it('a backoff whose payload move fails still records the outcome; the claim then fails the task as before', async () => {
    const s = await createTestStore(server.endpoint, CONFIG);
    const { task } = await s.store.enqueue({ type: TYPE, owner: OWNER, payload, maxAttempts: 3 });
    const [claimed] = (await s.store.claim({ workerId: 'w', types: [TYPE], max: 1 })).claimed;
    // The payload item is gone (as if removed by hand): its move cannot apply.
    const item = await payloadItem(s, task.id);
    await s.doc.send(
      new DeleteCommand({ TableName: s.config.tableName, Key: { pk: item!.pk, sk: item!.sk } }),
    );
    const backoff = 7 * DAY;
    const after = await s.store.fail({
      lease: claimed!.lease,
      error: 'later',
      backoff: { baseMs: backoff, maxMs: backoff },
    });
    expect(after.status).toBe('QUEUED');
    expect(await payloadItem(s, task.id)).toBeUndefined();
    s.clock.advance(backoff + 1);
    // Due again: promoted (recovery's sweep, as on AWS), then claimed, and failed for want of its payload.
    await s.store.recover();
    expect((await s.store.claim({ workerId: 'w', types: [TYPE], max: 1 })).claimed).toEqual([]);
    expect((await s.store.get({ id: task.id, owner: OWNER })).error).toMatch(/PAYLOAD_MISSING/);
  });
});
