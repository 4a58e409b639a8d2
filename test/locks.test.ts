import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { defineConfig } from '../shared/config.js';
import { ValidationError } from '../shared/errors.js';
import { LockClient, LockLostError, LockNotAcquiredError } from '../shared/locks/lock-client.js';
import { ensureTable } from '../shared/store/table-setup.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { dropNextAnswer } from './support/lost-answer.js';
import { sleep } from './support/worker-world.js';

let server: TestDynamo;
const config = defineConfig({ tableName: 'locks', clockSkewMs: 0 });
const clients: DynamoDBClient[] = [];

/** A lock client with its own DynamoDB client, as another process would have. */
const node = () => {
  const client = new DynamoDBClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  clients.push(client);
  return { client, locks: new LockClient({ doc: DynamoDBDocumentClient.from(client), config }) };
};

beforeAll(async () => {
  server = await startTestDynamo();
  await ensureTable(node().client, config.tableName);
});
afterAll(() => server.close());

describe('locks', () => {
  it(
    '20 contenders: one holder at a time, and each holder’s fencing token is larger than every earlier one',
    { timeout: 60_000 },
    async () => {
      let inside = 0;
      let maxInside = 0;
      let guardedValue = { token: 0, writes: 0 };
      let staleWrites = 0;
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const { locks } = node();
          await locks.withLock(
            'counter',
            { leaseMs: 2_000, mode: 'auto-renew', retries: 100, retryDelayMs: 20 },
            async (lock) => {
              inside++;
              maxInside = Math.max(maxInside, inside);
              // The guarded resource accepts a write only with a token above the last one it saw.
              if (lock.token <= guardedValue.token) staleWrites++;
              else guardedValue = { token: lock.token, writes: guardedValue.writes + 1 };
              await sleep(3);
              inside--;
            },
          );
        }),
      );
      expect(maxInside).toBe(1);
      expect(staleWrites).toBe(0);
      expect(guardedValue.writes).toBe(20);
      expect(guardedValue.token).toBe(20);
    },
  );

  it('a fixed lease runs out on its own: the holder can tell, and the next holder gets a larger token', async () => {
    const a = node().locks;
    const b = node().locks;
    // 1.5 s: the rival's acquire and read-back must both land within it, on a machine under load.
    const first = await a.acquire('fixed', { leaseMs: 1_500, mode: 'fixed' });
    await expect(b.acquire('fixed', { leaseMs: 300, mode: 'fixed' })).rejects.toBeInstanceOf(
      LockNotAcquiredError,
    );
    expect(first.expired()).toBe(false);
    await sleep(first.leaseUntil + 50 - Date.now());
    expect(first.expired()).toBe(true);
    expect(first.signal.aborted).toBe(true);
    expect((first.signal.reason as LockLostError).reason).toBe('expired');
    const second = await b.acquire('fixed', { leaseMs: 300, mode: 'fixed' });
    expect(second.token).toBe(first.token + 1);
    await second.release();
  });

  it('auto-renew holds the lock across five times its lease', async () => {
    const holder = node().locks;
    const rival = node().locks;
    const lock = await holder.acquire('renewed', { leaseMs: 600, mode: 'auto-renew' });
    const until = Date.now() + 3_000;
    let rivalWins = 0;
    while (Date.now() < until) {
      rivalWins += await rival.acquire('renewed', { leaseMs: 300, mode: 'fixed' }).then(
        () => 1,
        () => 0,
      );
      await sleep(50);
    }
    expect(rivalWins).toBe(0);
    expect(lock.signal.aborted).toBe(false);
    expect(await lock.release()).toBe(true);
    expect((await rival.acquire('renewed', { leaseMs: 300, mode: 'fixed' })).token).toBe(lock.token + 1);
  });

  it('a holder paused past its lease cannot release the new holder’s lock', async () => {
    const paused = node().locks;
    const next = node();
    const old = await paused.acquire('paused', { leaseMs: 200, mode: 'fixed' });
    await sleep(250); // the "pause": no renewals, the lease runs out
    const current = await next.locks.acquire('paused', { leaseMs: 5_000, mode: 'fixed' });
    expect(await old.release()).toBe(false);
    const item = (
      await DynamoDBDocumentClient.from(next.client).send(
        new GetCommand({
          TableName: config.tableName,
          Key: { pk: 'LOCK#paused', sk: 'LOCK' },
          ConsistentRead: true,
        }),
      )
    ).Item;
    expect(item).toMatchObject({ holder: current.holder, lockToken: current.token });
    expect(await current.release()).toBe(true);
  });

  it('a busy lock is refused at once, or after the retries asked for (3 tries, 500 ms apart)', async () => {
    const a = node().locks;
    const b = node().locks;
    const held = await a.acquire('busy', { leaseMs: 5_000, mode: 'fixed' });
    const started = Date.now();
    const error = await b
      .acquire('busy', { leaseMs: 1_000, mode: 'fixed', retries: 2 })
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect(error).toMatchObject({
      name: 'LockNotAcquiredError',
      key: 'busy',
      current: { holder: held.holder, lockToken: held.token },
    });
    await held.release();
  });

  it('an acquisition whose answer was lost is found by its write id', async () => {
    const { client, locks } = node();
    const fault = dropNextAnswer(client, 'UpdateItem');
    const lock = await locks.acquire('lost-answer', { leaseMs: 1_000, mode: 'fixed' });
    expect(fault.dropped).toBe(1);
    expect(lock.token).toBe(1);
    expect(await lock.release()).toBe(true);
  });

  it('refuses bad options with a ValidationError, writing nothing', async () => {
    const { client, locks } = node();
    await expect(locks.acquire('', { leaseMs: 1_000, mode: 'fixed' })).rejects.toBeInstanceOf(
      ValidationError,
    );
    const bad = (await locks
      .acquire('k', { leaseMs: 5, mode: 'sometimes' as never })
      .catch((e: unknown) => e)) as ValidationError;
    expect(bad.problems.map((p) => p.path).sort()).toEqual(['leaseMs', 'mode']);
    const item = await DynamoDBDocumentClient.from(client).send(
      new GetCommand({
        TableName: config.tableName,
        Key: { pk: 'LOCK#k', sk: 'LOCK' },
        ConsistentRead: true,
      }),
    );
    expect(item.Item).toBeUndefined();
  });
});
