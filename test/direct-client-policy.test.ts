/**
 * Direct mode's narrow policy (shared/client/direct-policy.ts; review 2, finding 3), enforced by the
 * sim's IAM gate with dynamodb:LeadingKeys over a real task table on dynalite: the direct client does
 * everything it offers under it, and the same credentials cannot write the queue's control items
 * (fleet seats, concurrency slots, the queue summary, another owner's counters). Under the grants the
 * docs used to list (the actions on the whole table) the same writes went through.
 */
import { DynamoDBClient, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDirectClient } from '../shared/client/direct-client.js';
import { directClientPolicy } from '../shared/client/direct-policy.js';
import { taskOf } from '../shared/client/batch-task.js';
import { startDynalite, type DynaliteServer } from '../tools/local/dynalite.js';
import { ensureTable } from '../shared/store/table-setup.js';
import { startIamGate, type IamGate } from '../tools/sim/dynamodb/iam-gate.js';
import { AccessLog } from '../tools/sim/iam/access-log.js';
import { IdentityStore, type SimPrincipal } from '../tools/sim/iam/identity-store.js';
import { TemplateResolver } from '../tools/sim/template/resolver.js';
import { demoEcho, demoTasks } from '../tasks/demo.js';

const REGION = 'eu-west-1';
const ACCOUNT = '123456789012';
const TABLE = 'direct-policy-tasks';
const TABLE_ARN = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${TABLE}`;
const OWNER = `arn:aws:iam::${ACCOUNT}:role/billing-batch`;

let dynalite: DynaliteServer;
let gate: IamGate;
let narrow: SimPrincipal;
let broad: SimPrincipal;

beforeAll(async () => {
  dynalite = await startDynalite();
  const admin = new DynamoDBClient({
    endpoint: dynalite.endpoint,
    region: REGION,
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  await ensureTable(admin, TABLE);
  admin.destroy();
  const identities = new IdentityStore(
    new TemplateResolver(
      { Resources: {} },
      { stackName: 'direct', region: REGION, accountId: ACCOUNT, apiEndpoint: () => 'http://127.0.0.1' },
    ),
    ACCOUNT,
  );
  narrow = identities.addCaller('narrow', OWNER, [
    directClientPolicy({
      tableArn: TABLE_ARN,
      tableKeyArn: `arn:aws:kms:${REGION}:${ACCOUNT}:key/k`,
      owner: OWNER,
    }),
  ]);
  // What docs/api.md listed before: the actions, on the table and its owner index, with no condition.
  broad = identities.addCaller('broad', `arn:aws:iam::${ACCOUNT}:role/broad`, [
    {
      Statement: [
        {
          Effect: 'Allow',
          Action: [
            'dynamodb:GetItem',
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
            'dynamodb:Query',
            'dynamodb:BatchGetItem',
          ],
          Resource: [TABLE_ARN, `${TABLE_ARN}/index/owner`],
        },
      ],
    },
  ]);
  gate = await startIamGate({
    backend: dynalite.endpoint,
    region: REGION,
    tables: [{ name: TABLE, arn: TABLE_ARN }],
    identities,
    log: new AccessLog(),
    indexLag: false,
    throttleScale: 0,
    ttl: false,
  });
});
afterAll(async () => {
  await gate?.close();
  await dynalite?.close();
});

const directAs = (caller: SimPrincipal) =>
  createDirectClient({
    tableName: TABLE,
    region: REGION,
    endpoint: gate.endpoint,
    credentials: caller.credentials,
    owner: OWNER,
    definitions: demoTasks,
  });

/** A raw write of one item as this caller: 'written', or the error DynamoDB (the gate) answered. */
async function put(caller: SimPrincipal, pk: string, sk: string): Promise<string> {
  const client = new DynamoDBClient({
    endpoint: gate.endpoint,
    region: REGION,
    credentials: caller.credentials,
    maxAttempts: 1,
  });
  try {
    await client.send(
      new PutItemCommand({
        TableName: TABLE,
        Item: { pk: { S: pk }, sk: { S: sk }, holder: { S: 'squatter' } },
      }),
    );
    return 'written';
  } catch (error) {
    return (error as Error).name;
  } finally {
    client.destroy();
  }
}

/** The owner's outcome-counter items, read straight from the emulator. */
async function statsItems(owner: string): Promise<number> {
  const admin = new DynamoDBClient({
    endpoint: dynalite.endpoint,
    region: REGION,
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  try {
    const out = await admin.send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `STATS#${owner}` } },
      }),
    );
    return out.Items?.length ?? 0;
  } finally {
    admin.destroy();
  }
}

/** The control items a direct client must not write: the fleet's seats, a slot, the summary, others' counters. */
const CONTROL_ITEMS: [string, string][] = [
  ['FLEET', 'SEAT#0'],
  ['LIMIT#type#demo.echo#0', 'SLOT#00000'],
  ['QUEUE', 'SUMMARY'],
  ['LOCK#nightly', 'LOCK'],
  ['SCHEDULES#3', 'x'],
  ['STATS#arn:aws:iam::123456789012:role/someone-else', 'MINUTE'],
];

describe('direct mode under its narrow policy', () => {
  it('enqueues, reads, lists, cancels and retries as its owner', async () => {
    const client = directAs(narrow);
    try {
      const { task, created } = await client.enqueue(
        demoEcho,
        { direct: 'narrow' },
        { idempotencyKey: 'n-1' },
      );
      expect(created).toBe(true);
      expect((await client.enqueue(demoEcho, { direct: 'narrow' }, { idempotencyKey: 'n-1' })).created).toBe(
        false,
      );
      expect((await client.get(task.id)).status).toBe('QUEUED');
      const listed = [];
      for await (const t of client.list({ pageSize: 10 })) listed.push(t.id);
      expect(listed).toContain(task.id);
      expect((await client.cancel(task.id)).status).toBe('CANCELLED');
      // Its count was written (flushOutcomes never throws: a refused write would only be missing).
      expect(await statsItems(OWNER)).toBeGreaterThan(0);
      expect((await client.retry(task.id)).status).toBe('QUEUED');
      const many = await client.enqueueMany([1, 2, 3].map((n) => taskOf(demoEcho, { n })));
      expect(many).toMatchObject({ created: 3, failed: 0 });
    } finally {
      client.close();
    }
  });

  it("cannot write the queue's control items, which the broad grants let it write", async () => {
    for (const [pk, sk] of CONTROL_ITEMS) {
      expect(await put(narrow, pk, sk), `${pk} / ${sk}`).toBe('AccessDeniedException');
      expect(await put(broad, pk, sk), `${pk} / ${sk} (broad)`).toBe('written');
    }
    // A task item it may write (it is a producer of tasks: that is what direct mode is for).
    expect(await put(narrow, 'TASK#raw', 'TASK')).toBe('written');
  });
});
