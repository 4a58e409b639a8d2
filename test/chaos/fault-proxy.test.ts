/**
 * The fault proxy's record of applied status writes: a write whose answer it dropped still applied, and
 * the record says so. (A chaos run once flaked this way: a recovery fix applied, its answer was dropped, the
 * SDK resent it by itself, the resend failed its own condition, and the fix was reported as skipped.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startDynalite, type DynaliteServer } from '../../tools/local/dynalite.js';
import { createDynamoClient, documentClientFor } from '../../shared/store/dynamo.js';
import { ensureTable } from '../../shared/store/table-setup.js';
import { startFaultProxy, statusSet, type FaultProxy } from './fault-proxy.js';

let db: DynaliteServer;
let proxy: FaultProxy;
let doc: DynamoDBDocumentClient;
const draws: number[] = [];

beforeAll(async () => {
  db = await startDynalite();
  // Faults only where the test queues draws: [0, 0.99] is "a fault" then "drop-answer" (the last kind).
  proxy = await startFaultProxy({
    target: db.endpoint,
    rate: 1,
    operations: ['UpdateItem'],
    random: () => draws.shift() ?? 1,
  });
  const setup = createDynamoClient({ region: 'local', dynamodbEndpoint: db.endpoint });
  await ensureTable(setup, 'proxy');
  setup.destroy();
  doc = documentClientFor(createDynamoClient({ region: 'local', dynamodbEndpoint: proxy.endpoint }));
});

afterAll(async () => {
  doc?.destroy();
  await proxy?.close();
  await db?.close();
});

it('records a status write that applied although its answer was dropped', async () => {
  const Key = { pk: 'TASK#x', sk: 'TASK' };
  await doc.send(new PutCommand({ TableName: 'proxy', Item: { ...Key, status: 'RUNNING', leaseToken: 5 } }));
  draws.push(0, 0.99);
  const fix = new UpdateCommand({
    TableName: 'proxy',
    Key,
    UpdateExpression: 'SET #s = :failed',
    ConditionExpression: '#s = :running AND leaseToken = :token',
    ExpressionAttributeNames: { '#s': 'status' },
    ExpressionAttributeValues: { ':failed': 'FAILED', ':running': 'RUNNING', ':token': 5 },
  });
  // The SDK resends on the dropped connection; the resend fails its own condition.
  await expect(doc.send(fix)).rejects.toMatchObject({
    name: 'ConditionalCheckFailedException',
    $metadata: { attempts: 2 },
  });
  expect(proxy.injected['drop-answer']).toBe(1);
  expect(
    (await doc.send(new GetCommand({ TableName: 'proxy', Key, ConsistentRead: true }))).Item?.status,
  ).toBe('FAILED');
  expect(
    proxy.statusWrites.map(({ pk, status, delivered, applied }) => ({ pk, status, delivered, applied })),
  ).toEqual([
    { pk: 'TASK#x', status: 'RUNNING', delivered: true, applied: 'yes' },
    { pk: 'TASK#x', status: 'FAILED', delivered: false, applied: 'yes' },
  ]);
});

it('reads the status an update sets from its expression', () => {
  const names = { '#a': 'leaseOwner', '#b': 'status' };
  const values = { ':o': { S: 'w' }, ':s': { S: 'QUEUED' } };
  expect(
    statusSet('UpdateItem', {
      UpdateExpression: 'SET #a = :o, #b = :s REMOVE leaseUntil ADD attempts :one',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    }),
  ).toBe('QUEUED');
  expect(
    statusSet('UpdateItem', {
      UpdateExpression: 'SET #a = :o REMOVE #b',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    }),
  ).toBeUndefined();
  expect(statusSet('PutItem', { Item: { status: { S: 'QUEUED' } } })).toBe('QUEUED');
});
