/**
 * The fault proxy's lagging index view: a write through the proxy is invisible to an index query for
 * the lag and visible after it, base-table reads stay exact, and a moved index entry stays where it
 * was (a stale head) until the lag has passed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { startDynalite, type DynaliteServer } from '../../tools/local/dynalite.js';
import { createDynamoClient, documentClientFor } from '../../shared/store/dynamo.js';
import { ensureTable } from '../../shared/store/table-setup.js';
import { INDEX } from '../../shared/table-layout.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';

const LAG_MS = 600;
let primary: DynaliteServer;
let replica: DynaliteServer;
let proxy: FaultProxy;
let doc: DynamoDBDocumentClient;
const destroy: (() => void)[] = [];
const TABLE = 'lag';
const { name: READY, partition: P, sort: S } = INDEX.ready;

beforeAll(async () => {
  [primary, replica] = await Promise.all([startDynalite(), startDynalite()]);
  // Every delay drawn at its maximum: each write reaches the index view exactly LAG_MS late.
  proxy = await startFaultProxy({
    target: primary.endpoint,
    rate: 0,
    indexLag: { replica: replica.endpoint, maxLagMs: LAG_MS, random: () => 1 },
  });
  for (const endpoint of [primary.endpoint, replica.endpoint]) {
    const client = createDynamoClient({ region: 'local', dynamodbEndpoint: endpoint });
    await ensureTable(client, TABLE);
    client.destroy();
  }
  const client = createDynamoClient({ region: 'local', dynamodbEndpoint: proxy.endpoint });
  destroy.push(() => client.destroy());
  doc = documentClientFor(client);
});

afterAll(async () => {
  for (const d of destroy) d();
  await proxy?.close();
  await Promise.all([primary?.close(), replica?.close()]);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const key = (id: string) => ({ pk: `TASK#${id}`, sk: 'TASK' });
const put = (id: string, fields: Record<string, unknown>) =>
  doc.send(new PutCommand({ TableName: TABLE, Item: { ...key(id), ...fields } }));
const read = async (id: string) =>
  (await doc.send(new GetCommand({ TableName: TABLE, Key: key(id), ConsistentRead: true }))).Item;

/** The ids in one ready partition, read through the proxy (from the lagging view). */
async function readyIds(
  partition: string,
  extra: { condition?: string; values?: Record<string, unknown>; params?: Record<string, unknown> } = {},
): Promise<string[]> {
  const out = await doc.send(
    new QueryCommand({
      TableName: TABLE,
      IndexName: READY,
      KeyConditionExpression: `#p = :p${extra.condition ? ` AND ${extra.condition}` : ''}`,
      ExpressionAttributeNames: { '#p': P, ...(extra.condition ? { '#s': S } : {}) },
      ExpressionAttributeValues: { ':p': partition, ...extra.values },
      ...extra.params,
    }),
  );
  return (out.Items ?? []).map((i) => String(i.pk).slice('TASK#'.length));
}

describe('the fault proxy with index lag', () => {
  it('hides a write from index queries for the lag, shows it after; base reads stay exact', async () => {
    await put('a', { status: 'QUEUED', [P]: 'p1', [S]: '0001' });
    const writtenAt = Date.now();
    // The table has it at once (consistent read by key); the ready index does not yet: a task missing from its index.
    expect((await read('a'))?.status).toBe('QUEUED');
    expect(await readyIds('p1')).toEqual([]);
    expect(Date.now() - writtenAt).toBeLessThan(LAG_MS);
    await sleep(LAG_MS + 200);
    expect(await readyIds('p1')).toEqual(['a']);

    // The task leaves the ready index (as a claim moves it): the index still shows it, a stale head,
    // while the table says otherwise; after the lag it is gone.
    await doc.send(
      new UpdateCommand({
        TableName: TABLE,
        Key: key('a'),
        UpdateExpression: 'SET #st = :r REMOVE #p, #s',
        ExpressionAttributeNames: { '#st': 'status', '#p': P, '#s': S },
        ExpressionAttributeValues: { ':r': 'RUNNING' },
      }),
    );
    const movedAt = Date.now();
    expect((await read('a'))?.status).toBe('RUNNING');
    expect(await readyIds('p1')).toEqual(['a']);
    expect(Date.now() - movedAt).toBeLessThan(LAG_MS);
    await sleep(LAG_MS + 200);
    expect(await readyIds('p1')).toEqual([]);

    // A delete reaches the view late too.
    await put('b', { [P]: 'p1', [S]: '0002' });
    await sleep(LAG_MS + 200);
    await doc.send(new DeleteCommand({ TableName: TABLE, Key: key('b') }));
    expect(await readyIds('p1')).toEqual(['b']);
    await sleep(LAG_MS + 200);
    expect(await readyIds('p1')).toEqual([]);
    expect(proxy.indexLag).toMatchObject({ retries: 0 });
    expect(proxy.indexLag!.indexReadsWhileBehind).toBeGreaterThan(0);
  });

  it("keeps DynamoDB's order, pagination and key conditions on the lagging view", async () => {
    const sks = ['0005#b', '0001#a', '0003#a', '0002#b', '0004#a'];
    await Promise.all(sks.map((sk, i) => put(`o${i}`, { [P]: 'p2', [S]: sk })));
    await sleep(LAG_MS + 200);
    const byKey = (wanted: string[]) => wanted.map((sk) => `o${sks.indexOf(sk)}`);
    const ascending = byKey([...sks].sort());
    expect(await readyIds('p2')).toEqual(ascending);
    expect(await readyIds('p2', { params: { ScanIndexForward: false } })).toEqual([...ascending].reverse());
    const first = await doc.send(
      new QueryCommand({
        TableName: TABLE,
        IndexName: READY,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': P },
        ExpressionAttributeValues: { ':p': 'p2' },
        Limit: 2,
      }),
    );
    expect(first.Items?.map((i) => String(i.pk).slice(5))).toEqual(ascending.slice(0, 2));
    expect(await readyIds('p2', { params: { ExclusiveStartKey: first.LastEvaluatedKey } })).toEqual(
      ascending.slice(2),
    );
    expect(await readyIds('p2', { condition: 'begins_with(#s, :x)', values: { ':x': '0003' } })).toEqual(
      byKey(['0003#a']),
    );
    expect(await readyIds('p2', { condition: '#s <= :x', values: { ':x': '0002#z' } })).toEqual(
      byKey(['0001#a', '0002#b']),
    );
    expect(
      await readyIds('p2', { condition: '#s BETWEEN :x AND :y', values: { ':x': '0002', ':y': '0004#z' } }),
    ).toEqual(byKey(['0002#b', '0003#a', '0004#a']));
  });
});
