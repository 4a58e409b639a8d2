/**
 * Closing the sim's DynamoDB gate: it stops taking requests first and answers the ones in flight
 * through a live backend (the TTL sweep under way is the TTL test's).
 */
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Backend } from '../tools/sim/dynamodb/backend.js';
import { signal, sleep, startHarness, TABLE } from './sim-dynamodb-harness.js';

afterEach(() => void vi.restoreAllMocks());

describe('sim DynamoDB: closing the gate', () => {
  it('answers a request in flight at close from the backend, then refuses new ones', async () => {
    const h = await startHarness({ indexLag: false, ttl: false, throttleScale: 0 });
    try {
      const arrived = signal();
      const release = signal();
      const send = Backend.prototype.send;
      vi.spyOn(Backend.prototype, 'send').mockImplementation(async function (this: Backend, ...args) {
        if (String(args[2]['x-amz-target']).endsWith('.PutItem')) {
          arrived.fire();
          await release.fired;
        }
        return send.apply(this, args);
      });
      const put = h.client().send(new PutItemCommand({ TableName: TABLE, Item: { pk: { S: 'late' } } }));
      await arrived.fired;
      const closed = h.gate.close();
      await sleep(50);
      release.fire();
      await expect(put).resolves.toMatchObject({ $metadata: { httpStatusCode: 200 } });
      await closed;
      await expect(
        h.client().send(new GetItemCommand({ TableName: TABLE, Key: { pk: { S: 'late' } } })),
      ).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await h.close();
    }
  });
});
