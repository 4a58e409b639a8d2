/**
 * TTL in the sim's DynamoDB gate: the sweeper deletes an item whose TTL attribute holds an epoch-seconds
 * time in the past (once its drawn delay has passed), leaves unexpired items and items refreshed
 * before the delete alone, and the GSI follows the delete after its lag.
 */
import {
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { Backend } from '../tools/sim/dynamodb/backend.js';
import { draws, GSI, signal, sleep, startHarness, sweeperThrough, TABLE } from './sim-dynamodb-harness.js';

const epoch = (ms: number) => ({ N: String(Math.floor(ms / 1000)) });
/** Puts the item `pk` (with `extra` attributes) that expires at `expiresAtMs`. */
const putExpiring = (
  c: DynamoDBClient,
  pk: string,
  expiresAtMs: number,
  extra: Record<string, { S: string }> = {},
) =>
  c.send(
    new PutItemCommand({ TableName: TABLE, Item: { pk: { S: pk }, ...extra, expires: epoch(expiresAtMs) } }),
  );

describe('sim DynamoDB: TTL', () => {
  it('deletes an expired item on a sweep, keeps an unexpired one, and the GSI follows after its lag', async () => {
    const h = await startHarness({
      ttl: { maxDelayMs: 0, sweepEveryMs: 100 },
      indexLag: { minMs: 200, maxMs: 200 },
      throttleScale: 0,
    });
    try {
      const c = h.client();
      const now = Date.now();
      await putExpiring(c, 'old', now - 60_000, { gpk: { S: 'T' } });
      await putExpiring(c, 'young', now + 3_600_000, { gpk: { S: 'T' } });
      const get = async (pk: string) =>
        (await c.send(new GetItemCommand({ TableName: TABLE, Key: { pk: { S: pk } }, ConsistentRead: true })))
          .Item;
      const indexed = async () =>
        (
          await c.send(
            new QueryCommand({
              TableName: TABLE,
              IndexName: GSI,
              KeyConditionExpression: 'gpk = :g',
              ExpressionAttributeValues: { ':g': { S: 'T' } },
            }),
          )
        ).Items?.map((i) => i.pk!.S).sort();
      // The sweeper runs on its own timer.
      for (let i = 0; i < 50 && (await get('old')); i++) await sleep(50);
      const deletedAt = Date.now();
      expect(await get('old')).toBeUndefined();
      expect(await get('young')).toBeDefined();
      expect(h.gate.stats().ttl).toMatchObject({ enabled: true, deleted: { [TABLE]: 1 } });
      // Within the lag the GSI may still list the deleted item; after it, only the living one.
      await sleep(Math.max(0, 200 + 150 - (Date.now() - deletedAt)));
      expect(await indexed()).toEqual(['young']);
    } finally {
      await h.close();
    }
  });

  it('waits for the delay drawn per item before deleting', async () => {
    let clock = Date.now();
    // maxDelay 10 min, draw 0.5: deleted 5 minutes after it expired.
    const h = await startHarness({
      ttl: { maxDelayMs: 600_000, sweepEveryMs: 3_600_000 },
      indexLag: false,
      throttleScale: 0,
      now: () => clock,
      random: draws(0.5),
    });
    try {
      const c = h.client();
      await putExpiring(c, 'late', clock - 60_000);
      await h.gate.sweepTtl();
      const count = async () => (await c.send(new ScanCommand({ TableName: TABLE, Select: 'COUNT' }))).Count;
      expect(await count()).toBe(1);
      clock += 3 * 60_000; // 4 minutes expired
      await h.gate.sweepTtl();
      expect(await count()).toBe(1);
      clock += 2 * 60_000; // 6 minutes expired
      await h.gate.sweepTtl();
      expect(await count()).toBe(0);
    } finally {
      await h.close();
    }
  });

  it('spares an item refreshed between the scan that found it and the delete', async () => {
    const h = await startHarness({ ttl: false, indexLag: false, throttleScale: 0 });
    try {
      const c = h.client();
      const now = Date.now();
      await putExpiring(c, 'refreshed', now - 60_000);
      // A client refreshes the item right after the sweeper's scan saw it expired.
      class RacingBackend extends Backend {
        override async call<T>(operation: string, input: unknown): Promise<T> {
          const out = await super.call<T>(operation, input);
          if (operation === 'Scan')
            await c.send(
              new UpdateItemCommand({
                TableName: TABLE,
                Key: { pk: { S: 'refreshed' } },
                UpdateExpression: 'SET expires = :later',
                ExpressionAttributeValues: { ':later': epoch(now + 3_600_000) },
              }),
            );
          return out;
        }
      }
      const backend = new RacingBackend(h.dynalite.endpoint);
      const sweeper = await sweeperThrough(backend);
      await sweeper.sweep();
      backend.close();
      const item = await c.send(
        new GetItemCommand({ TableName: TABLE, Key: { pk: { S: 'refreshed' } }, ConsistentRead: true }),
      );
      expect(item.Item?.expires).toEqual(epoch(now + 3_600_000));
      expect(sweeper.stats()).toMatchObject({ spared: 1, deleted: {} });
    } finally {
      await h.close();
    }
  });

  it('a sweep under way at close deletes nothing more, and close waits for it', async () => {
    const h = await startHarness({ ttl: false, indexLag: false, throttleScale: 0 });
    try {
      const c = h.client();
      for (const pk of ['a', 'b']) await putExpiring(c, pk, Date.now() - 60_000);
      const scanning = signal();
      const release = signal();
      class SlowScan extends Backend {
        readonly calls: string[] = [];
        override async call<T>(operation: string, input: unknown): Promise<T> {
          this.calls.push(operation);
          if (operation === 'Scan') {
            scanning.fire();
            await release.fired;
          }
          return super.call<T>(operation, input);
        }
      }
      const backend = new SlowScan(h.dynalite.endpoint);
      const sweeper = await sweeperThrough(backend);
      let swept = false;
      const sweep = sweeper.sweep().then(() => (swept = true));
      await scanning.fired;
      const closing = sweeper.close();
      await sleep(20);
      release.fire();
      await closing;
      expect(swept).toBe(true);
      await sweep;
      backend.close();
      expect(backend.calls).not.toContain('DeleteItem');
      expect((await c.send(new ScanCommand({ TableName: TABLE, Select: 'COUNT' }))).Count).toBe(2);
    } finally {
      await h.close();
    }
  });
});
