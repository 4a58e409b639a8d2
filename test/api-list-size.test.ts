import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureTable } from '../shared/store/table-setup.js';
import { MAX_LIST_PAGE_BYTES } from '../shared/store/task-queries.js';
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
    'a page of large tasks stops before 5 MB with a cursor, and the pages together hold every task once, newest first',
    { timeout: 120_000 },
    async () => {
      const caller = 'arn:aws:iam::123456789012:user/bulky';
      const ids: string[] = [];
      // 26 tasks of 240 KB: 6.2 MB in one page of 100.
      for (let i = 0; i < 26; i++)
        ids.push(
          (
            await call({
              method: 'POST',
              path: '/tasks',
              caller,
              body: { type: 'demo.echo', payload: `${i}:${'x'.repeat(240_000)}` },
            })
          ).body.task.id,
        );
      const pages = await listAll(caller);
      expect(pages.length).toBeGreaterThan(1);
      for (const page of pages) {
        expect(page.bytes).toBeLessThan(LAMBDA_RESPONSE_LIMIT);
        expect(page.bytes).toBeLessThan(MAX_LIST_PAGE_BYTES + 64 * 1024);
      }
      expect(pages.flatMap((p) => p.ids)).toEqual([...ids].reverse());
    },
  );

  it(
    'counts what Lambda counts: a body full of quotes weighs twice as much once escaped into the result',
    { timeout: 120_000 },
    async () => {
      const caller = 'arn:aws:iam::123456789012:user/quoted';
      const ids: string[] = [];
      // 14 tasks whose payload is 125,000 quote characters: 3.5 MB of body, 7 MB as Lambda returns it.
      for (let i = 0; i < 14; i++)
        ids.push(
          (
            await call({
              method: 'POST',
              path: '/tasks',
              caller,
              body: { type: 'demo.echo', payload: `${i}${'"'.repeat(125_000)}` },
            })
          ).body.task.id,
        );
      const pages = await listAll(caller);
      expect(pages.length).toBeGreaterThan(1);
      for (const page of pages) expect(page.bytes).toBeLessThan(LAMBDA_RESPONSE_LIMIT);
      expect(pages.flatMap((p) => p.ids)).toEqual([...ids].reverse());
    },
  );

  it(
    'with a status filter a cut page still goes on exactly after its last task',
    { timeout: 120_000 },
    async () => {
      const caller = 'arn:aws:iam::123456789012:user/filtered';
      const queued: string[] = [];
      // 39 tasks of 240 KB, 26 of them QUEUED: 6.2 MB in one page.
      for (let i = 0; i < 39; i++) {
        const id = (
          await call({
            method: 'POST',
            path: '/tasks',
            caller,
            body: { type: 'demo.echo', payload: 'y'.repeat(240_000) },
          })
        ).body.task.id as string;
        // Every third task is cancelled: the filter skips it.
        if (i % 3 === 2)
          expect((await call({ method: 'POST', path: `/tasks/${id}/cancel`, caller })).status).toBe(200);
        else queued.push(id);
      }
      const seen: string[] = [];
      let pages = 0;
      let cursor: string | undefined;
      do {
        const page = await call({
          method: 'GET',
          path: '/tasks',
          caller,
          query: { limit: '100', status: 'QUEUED', ...(cursor ? { cursor } : {}) },
        });
        expect(page.bytes).toBeLessThan(LAMBDA_RESPONSE_LIMIT);
        seen.push(...page.body.tasks.map((t: { id: string }) => t.id));
        cursor = page.body.nextCursor;
        pages++;
      } while (cursor);
      expect(pages).toBeGreaterThan(1);
      expect(seen).toEqual([...queued].reverse());
    },
  );
});
