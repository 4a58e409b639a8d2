import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureTable } from '../shared/store/table-setup.js';
import { MAX_PAYLOAD_BYTES } from '../shared/task-inputs.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { apiEvent, type EventSpec } from './support/api-events.js';

/** What a synchronous Lambda invocation may return; API Gateway answers 500 to a larger result. */
const LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024;

let server: TestDynamo;
let handler: (typeof import('../functions/api.js'))['handler'];
const table = `api-size-${process.pid}`;

beforeAll(async () => {
  server = await startTestDynamo();
  Object.assign(process.env, {
    LEASEHOLD_DYNAMODB_ENDPOINT: server.endpoint,
    LEASEHOLD_TABLE: table,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  });
  await ensureTable(
    new DynamoDBClient({
      endpoint: server.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    }),
    table,
  );
  ({ handler } = await import('../functions/api.js'));
});
afterAll(() => server.close());

/** The Lambda result and the size Lambda counts: the whole result object as JSON, the body a string inside it. */
const call = async (spec: EventSpec) => {
  const res = await handler(apiEvent(spec));
  return {
    status: res.statusCode,
    bytes: Buffer.byteLength(JSON.stringify(res)),
    body: JSON.parse(res.body) as Record<string, any>,
  };
};

async function listAll(caller: string) {
  const pages: { ids: string[]; bytes: number }[] = [];
  let cursor: string | undefined;
  do {
    const page = await call({
      method: 'GET',
      path: '/tasks',
      caller,
      query: { limit: '100', ...(cursor ? { cursor } : {}) },
    });
    expect(page.status).toBe(200);
    pages.push({ ids: page.body.tasks.map((t: { id: string }) => t.id), bytes: page.bytes });
    cursor = page.body.nextCursor;
  } while (cursor);
  return pages;
}

describe('GET /tasks stays under Lambda’s 6 MB response limit', () => {
  it(
    'a list carries no payloads or results: 30 tasks of 240 KB list in one small page, and GET /tasks/{id} returns each payload whole',
    { timeout: 120_000 },
    async () => {
      const caller = 'arn:aws:iam::123456789012:user/bulky';
      const ids: string[] = [];
      // 30 tasks of 240 KB: 7.2 MB of payload, which one page of 100 could not hold if lists carried it.
      const payloadOf = (i: number) => `${i}:${'x'.repeat(240_000)}`;
      for (let i = 0; i < 30; i++)
        ids.push(
          (
            await call({
              method: 'POST',
              path: '/tasks',
              caller,
              body: { type: 'demo.echo', payload: payloadOf(i) },
            })
          ).body.task.id,
        );
      const pages = await listAll(caller);
      expect(pages).toHaveLength(1);
      expect(pages[0]!.bytes).toBeLessThan(100 * 1024);
      expect(pages.flatMap((p) => p.ids)).toEqual([...ids].reverse());
      for (const [i, id] of ids.entries()) {
        const got = await call({ method: 'GET', path: `/tasks/${id}`, caller });
        expect(got.status).toBe(200);
        expect(got.body.task.payload).toBe(payloadOf(i));
        expect(got.bytes).toBeLessThan(LAMBDA_RESPONSE_LIMIT);
      }
    },
  );

  it('one task of the largest payload, all quotes, still fits in what Lambda returns once escaped', async () => {
    const caller = 'arn:aws:iam::123456789012:user/quoted';
    // About 256 KB of quote characters: twice that in the body's JSON, four times once Lambda escapes the body.
    const payload = '"'.repeat(MAX_PAYLOAD_BYTES / 2 - 1024);
    const created = await call({
      method: 'POST',
      path: '/tasks',
      caller,
      body: { type: 'demo.echo', payload },
    });
    expect(created.status).toBe(201);
    expect(created.bytes).toBeLessThan(LAMBDA_RESPONSE_LIMIT);
    const got = await call({ method: 'GET', path: `/tasks/${created.body.task.id as string}`, caller });
    expect(got.body.task.payload).toBe(payload);
    const [page] = await listAll(caller);
    expect(page!.bytes).toBeLessThan(4 * 1024);
  });
});
