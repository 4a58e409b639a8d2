/**
 * Direct mode against the sim: the direct client signs its DynamoDB requests as one of the sim's
 * callers and sends them to the sim's IAM-gated DynamoDB endpoint (the table's real permissions are
 * checked there), and the worker Lambda the sim runs picks the task up, on its scheduled tick or on
 * the direct client's own kick. The sim has no STS, so the owner is given: the caller's ARN, as
 * `ownerOfArn` makes it (what GetCallerIdentity would have answered).
 */
import { describe, expect, it } from 'vitest';
import { ownerOfArn } from '../../shared/api/caller.js';
import { createDirectClient, type DirectClientOptions } from 'leasehold/client/direct';
import { taskDefinitions } from '../../tasks/catalog.js';
import { demoEcho } from '../../tasks/demo.js';
import { accessRecords, api, sim } from './support/sim-client.js';

/**
 * What the direct client's README section says it needs: these on the table (Query on its owner index
 * too), and kms:Decrypt on the table's customer-managed key, which DynamoDB checks as the caller.
 */
const DOCUMENTED_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
  'kms:Decrypt',
];

const figure = (name: string, value: number, unit: string) =>
  process.stdout.write(`FIGURE ${name}: ${value} ${unit}\n`);

function directAs(name: string, extra: Partial<DirectClientOptions> = {}) {
  const info = sim();
  const caller = info.callers.find((c) => c.name === name)!;
  expect(info.dynamodb.tables).toHaveLength(1);
  return createDirectClient({
    tableName: info.dynamodb.tables[0]!,
    region: info.region,
    endpoint: info.dynamodb.gatedEndpoint,
    credentials: {
      accessKeyId: caller.accessKeyId,
      secretAccessKey: caller.secretAccessKey,
      ...(caller.sessionToken ? { sessionToken: caller.sessionToken } : {}),
    },
    owner: ownerOfArn(caller.arn),
    definitions: taskDefinitions,
    ...extra,
  });
}

const adminArn = () => sim().callers.find((c) => c.name === 'admin')!.arn;

describe('direct mode on the deployed shape', () => {
  it("without a kick, the worker Lambda's scheduled tick runs a task enqueued directly (within about two minutes)", async () => {
    const since = Date.now();
    const client = directAs('admin');
    try {
      const { task, created } = await client.enqueue(demoEcho, { direct: 'tick' });
      expect(created).toBe(true);
      const done = await client.waitFor(task.id, { timeout: 170_000 });
      expect(done).toMatchObject({ status: 'SUCCESS', attempts: 1, result: { direct: 'tick' } });
      figure(
        'direct enqueue-to-start without a kick',
        Date.parse(done.startedAt!) - Date.parse(done.createdAt),
        'ms',
      );
      // The API shows it to the same principal, as the same JSON.
      const viaApi = await api('GET', `/tasks/${task.id}`, undefined, 'admin');
      expect(viaApi.status).toBe(200);
      expect(viaApi.body.task).toEqual(await client.get(task.id));
      // A page of the owner's list: the owner index and the batch read of the tasks it names.
      for await (const listed of client.list({ type: 'demo.echo', pageSize: 5 })) {
        expect(listed.type).toBe('demo.echo');
        break;
      }
    } finally {
      client.close();
    }
    // Every DynamoDB request the client sent was allowed, and was one of the documented actions.
    const own = (await accessRecords(since)).filter(
      (r) => r.service === 'dynamodb' && r.principalArn === adminArn(),
    );
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((r) => r.allowed)).toBe(true);
    const used = [...new Set(own.map((r) => r.action))];
    expect(used.filter((action) => !DOCUMENTED_ACTIONS.includes(action))).toEqual([]);
    expect(used).toEqual(
      expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:BatchGetItem', 'kms:Decrypt']),
    );
  });

  it('with workerFunctionName, the client starts a worker itself: the task starts within seconds (under the narrow policy)', async () => {
    const since = Date.now();
    const worker = sim().functions.find((f) => f.logicalId.startsWith('Worker'))!;
    // The role with directClientPolicy(...) only: the kick's seat read and invoke are in it.
    const client = directAs('direct-producer', {
      workerFunctionName: worker.name,
      lambdaEndpoint: sim().lambdaEndpoint,
    });
    try {
      const { task } = await client.enqueue(demoEcho, { direct: 'kick' });
      expect(client.kicks).toEqual({ sent: 1, failed: 0 });
      const done = await client.waitFor(task.id, { timeout: 30_000 });
      expect(done).toMatchObject({ status: 'SUCCESS', result: { direct: 'kick' } });
      const startDelay = Date.parse(done.startedAt!) - Date.parse(done.createdAt);
      // A tick comes once a minute: a start this soon is the kick's (or a worker already running).
      expect(startDelay).toBeLessThan(15_000);
      figure('direct enqueue-to-start with a kick', startDelay, 'ms');
    } finally {
      client.close();
    }
    const producerArn = sim().callers.find((c) => c.name === 'direct-producer')!.arn;
    const records = (await accessRecords(since)).filter((r) => r.principalArn === producerArn);
    const invokes = records.filter((r) => r.action === 'lambda:InvokeFunction');
    expect(invokes.length).toBeGreaterThanOrEqual(1);
    expect(invokes.every((r) => r.allowed && r.resource === worker.arn)).toBe(true);
    // Nothing it sent was refused: the narrow policy is enough for the whole path.
    expect(records.filter((r) => !r.allowed)).toEqual([]);
  });

  it('an idempotent repeat, cancel and retry pass the gate with the documented actions', async () => {
    const since = Date.now();
    const client = directAs('admin');
    try {
      const key = `direct-sim-${Date.now()}`;
      const first = await client.enqueue(demoEcho, 'later', { delay: 300_000, idempotencyKey: key });
      const again = await client.enqueue(demoEcho, 'later', { delay: 300_000, idempotencyKey: key });
      expect(again).toMatchObject({ created: false, task: { id: first.task.id } });
      expect((await client.cancel(first.task.id)).status).toBe('CANCELLED');
      expect((await client.retry(first.task.id)).status).toBe('QUEUED');
    } finally {
      client.close();
    }
    const own = (await accessRecords(since)).filter(
      (r) => r.service === 'dynamodb' && r.principalArn === adminArn(),
    );
    expect(own.every((r) => r.allowed)).toBe(true);
    const used = [...new Set(own.map((r) => r.action))];
    expect(used.filter((action) => !DOCUMENTED_ACTIONS.includes(action))).toEqual([]);
    expect(used).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:UpdateItem']));
  });

  it("a caller without DynamoDB permissions gets DynamoDB's AccessDeniedException as it is", async () => {
    // The producer may call the API (execute-api:Invoke) and nothing else.
    const client = directAs('producer');
    try {
      await expect(client.enqueue(demoEcho, 'refused')).rejects.toMatchObject({
        name: 'AccessDeniedException',
        message: expect.stringMatching(/not authorized to perform: dynamodb:PutItem/),
      });
    } finally {
      client.close();
    }
  });
});
