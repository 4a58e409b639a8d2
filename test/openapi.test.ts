/**
 * The OpenAPI document: generated for exactly the API's routes, valid OpenAPI 3.1 by a maintained
 * validator, the same as docs/openapi.json, and served by GET /openapi.json. Then the conformance
 * checker that test/api.test.ts runs on every exchange: here, that it catches what it is for.
 */
import { readFileSync } from 'node:fs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { API_ROUTES, handleApiEvent, type ApiDeps } from '../shared/api/api-handler.js';
import { openApiDocument, type TaskTypeDescription } from '../shared/api/openapi.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { OPENAPI_JSON } from '../shared/api/write-openapi.js';
import { taskDefinitions } from '../tasks/catalog.js';
import { apiEvent } from './support/api-events.js';
import { OpenApiConformance, type Exchange } from './support/openapi-conformance.js';

const document = openApiDocument(API_ROUTES, taskDefinitions);
const routeKeys = API_ROUTES.map((r) => `${r.method} ${r.path}`).sort();
const documentedKeys = Object.entries(document.paths)
  .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
  .sort();

describe('the OpenAPI document', () => {
  it('documents every route of the API, and nothing else', () => {
    expect(documentedKeys).toEqual(routeKeys);
  });

  it('cannot be built for a route it does not describe, or without a route it describes', () => {
    expect(() => openApiDocument([...API_ROUTES, { method: 'GET', path: '/tasks/{id}/logs' }])).toThrow(
      /Describe in shared\/api\/openapi-operations\.ts: GET \/tasks\/\{id\}\/logs/,
    );
    expect(() => openApiDocument(API_ROUTES.filter((r) => r.path !== '/health'))).toThrow(
      /no route of the API: GET \/health/,
    );
  });

  it('gives every operation a unique operationId, a summary, a 2xx and the function’s 500', () => {
    const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
    expect(new Set(operations.map((o) => o.operationId)).size).toBe(routeKeys.length);
    for (const operation of operations) {
      expect(operation.summary, operation.operationId).toBeTruthy();
      expect(
        Object.keys(operation.responses).some((s) => /^2\d\d$/.test(s)),
        operation.operationId,
      ).toBe(true);
      expect(operation.responses['500']?.content, operation.operationId).toHaveProperty([
        'application/problem+json',
      ]);
    }
    expect(document.security).toEqual([{ sigv4: [] }]);
  });

  it('is valid OpenAPI 3.1 for @seriousme/openapi-schema-validator, which refuses a broken one', async () => {
    const validator = new Validator();
    expect(await validator.validate(structuredClone(document))).toEqual({ valid: true });
    expect(validator.version).toBe('3.1');
    const broken = structuredClone(document);
    broken.paths['/tasks/{id}']!.get!.parameters![0]!.required = false;
    expect((await validator.validate(broken)).valid).toBe(false);
  });

  it('is what docs/openapi.json holds', () => {
    const onDisk = JSON.parse(readFileSync(OPENAPI_JSON, 'utf8'));
    expect(
      onDisk,
      'docs/openapi.json is stale: run `npm run openapi` (npx tsx shared/api/write-openapi.ts)',
    ).toEqual(document);
  });

  it('lists every catalog type, in catalog order, with its payload’s JSON Schema as POST /tasks takes it', () => {
    const types = document['x-leasehold-task-types'] as TaskTypeDescription[];
    expect(types.map((t) => t.type)).toEqual(taskDefinitions.map((d) => d.name));
    for (const [i, definition] of taskDefinitions.entries()) {
      const { payloadSchema, maxAttempts, timeoutMs } = types[i]!;
      expect(payloadSchema, definition.name).toBeTypeOf('object');
      expect(maxAttempts).toBe(definition.maxAttempts);
      expect(timeoutMs).toBe(definition.timeoutMs);
      // The schema says what the type's zod schema says: a payload one takes, the other takes.
      const ajv = new Ajv2020({ strict: false });
      const validate = ajv.compile(payloadSchema);
      for (const payload of [
        undefined,
        {},
        { ms: 5 },
        { ms: -1 },
        { failTimes: 1 },
        { afterMs: 1, blockMs: 2 },
        'x',
      ])
        expect(validate(payload), `${definition.name} ${JSON.stringify(payload)}`).toBe(
          definition.schema.safeParse(payload).success,
        );
    }
    expect(types.find((t) => t.type === 'demo.report')).toMatchObject({ timeoutMs: 240_000 });
    // Without definitions the document has no such member; each pair is built once.
    expect(openApiDocument(API_ROUTES)).not.toHaveProperty(['x-leasehold-task-types']);
    expect(openApiDocument(API_ROUTES, taskDefinitions)).toBe(document);
    expect(openApiDocument(API_ROUTES, [...taskDefinitions])).not.toBe(document);
  });

  it('is built once and served by GET /openapi.json, unsigned callers too (IAM guards it in AWS)', async () => {
    expect(openApiDocument(API_ROUTES, taskDefinitions)).toBe(document);
    // The route reads no dependency; the logger only answers an error.
    const deps = {
      logger: new Logger({ logLevel: 'SILENT' }),
      openApi: () => openApiDocument(API_ROUTES, taskDefinitions),
    } as unknown as ApiDeps;
    const res = await handleApiEvent(apiEvent({ method: 'GET', path: '/openapi.json', caller: null }), deps);
    expect([res.statusCode, res.headers['content-type']]).toEqual([200, 'application/json']);
    expect(JSON.parse(res.body)).toEqual(document);
  });
});

describe('the conformance checker', () => {
  const checker = new OpenApiConformance(document);
  const time = '2026-11-30T09:00:00.000Z';
  const task = {
    id: 't1',
    type: 'demo.echo',
    status: 'QUEUED',
    priority: 0,
    attempts: 0,
    maxAttempts: 3,
    createdAt: time,
    updatedAt: time,
    availableAt: time,
  };
  const problem = (status: number, extra = {}) =>
    JSON.stringify({ type: 'about:blank', title: 'x', status, code: 'X', detail: 'x', ...extra });
  const exchange = (e: Partial<Exchange> & Pick<Exchange, 'method' | 'path' | 'status'>): Exchange => ({
    responseHeaders: { 'content-type': e.status >= 400 ? 'application/problem+json' : 'application/json' },
    responseBody: e.status >= 400 ? problem(e.status) : '',
    ...e,
  });
  const mismatches = (e: Parameters<typeof exchange>[0]) => checker.check(exchange(e)).mismatches.join('\n');

  it('passes what the document says', () => {
    const created = {
      method: 'POST',
      path: '/tasks',
      requestContentType: 'application/json; charset=utf-8',
      requestBody: JSON.stringify({ type: 'demo.echo', priority: 5, runAt: time }),
      status: 201,
      responseHeaders: { 'content-type': 'application/json', location: '/tasks/t1' },
      responseBody: JSON.stringify({ task }),
    };
    expect(checker.check(exchange(created))).toEqual({ operationId: 'createTask', mismatches: [] });
    const page = JSON.stringify({ tasks: [task], nextCursor: 'c' });
    expect(
      mismatches({ method: 'GET', path: '/tasks', query: { limit: '2' }, status: 200, responseBody: page }),
    ).toBe('');
    expect(mismatches({ method: 'GET', path: '/tasks/t1', status: 404 })).toBe('');
    expect(mismatches({ method: 'DELETE', path: '/schedules/nightly', status: 204 })).toBe('');
    expect(mismatches({ method: 'GET', path: '/nothing', status: 404 })).toBe('');
    expect(
      mismatches({
        method: 'DELETE',
        path: '/tasks',
        status: 405,
        responseHeaders: { ...problemHeaders, allow: 'POST, GET' },
      }),
    ).toBe('');
  });

  const problemHeaders = { 'content-type': 'application/problem+json' };

  it('catches an answer the schema does not have: an extra member, a missing one, a wrong type', () => {
    const get = (body: unknown) =>
      mismatches({ method: 'GET', path: '/tasks/t1', status: 200, responseBody: JSON.stringify(body) });
    expect(get({ task: { ...task, owner: 'alice' } })).toMatch(/must NOT have additional properties.*owner/);
    const { status: _status, ...statusless } = task;
    expect(get({ task: statusless })).toMatch(/must have required property 'status'/);
    expect(get({ task: { ...task, createdAt: 1_796_029_200_000 } })).toMatch(/createdAt must be string/);
  });

  it('catches a status, content type or header the operation does not document', () => {
    expect(mismatches({ method: 'GET', path: '/health', status: 404 })).toMatch(/getHealth documents no 404/);
    expect(
      mismatches({
        method: 'GET',
        path: '/tasks/t1',
        status: 404,
        responseHeaders: { 'content-type': 'application/json' },
      }),
    ).toMatch(/content-type application\/json of the 404 answer is not documented/);
    const noLocation = { method: 'POST', path: '/tasks', requestBody: '{"type":"demo.echo"}' };
    expect(
      mismatches({
        ...noLocation,
        requestContentType: 'application/json',
        status: 201,
        responseBody: JSON.stringify({ task }),
      }),
    ).toMatch(/lacks the header location/);
  });

  it('catches a 2xx to a request the document refuses: body, query, path', () => {
    const ok = { status: 200, responseBody: JSON.stringify({ task }) };
    const post = (body: unknown, contentType = 'application/json') =>
      mismatches({
        method: 'POST',
        path: '/tasks',
        requestContentType: contentType,
        requestBody: JSON.stringify(body),
        ...ok,
      });
    expect(post({ type: 'demo.echo', priority: 0.5 })).toMatch(/request body\/priority must be integer/);
    expect(post({ type: 'demo.echo', owner: 'bob' })).toMatch(/additional properties/);
    expect(post({ type: 'demo.echo' }, 'text/plain')).toMatch(
      /request content-type text\/plain is not documented/,
    );
    expect(post({ type: 'demo.echo' }, 'application/problem+json')).toBe('');
    const page = JSON.stringify({ tasks: [] });
    const list = (query: Record<string, string>) =>
      mismatches({ method: 'GET', path: '/tasks', query, status: 200, responseBody: page });
    expect(list({ limit: '0' })).toMatch(/query limit must be >= 1/);
    expect(list({ owner: 'bob' })).toMatch(/query owner is not documented/);
    const schedule = mismatches({
      method: 'GET',
      path: '/schedules/has%20space',
      status: 200,
      responseBody: '{}',
    });
    expect(schedule).toMatch(/path \{name\} must match pattern/);
    // A refused request is not checked: refusing it is right.
    expect(mismatches({ method: 'GET', path: '/tasks', query: { limit: '0' }, status: 400 })).toBe('');
  });

  it('catches a request no operation takes that is answered anything but the function’s 404 or 405', () => {
    expect(mismatches({ method: 'GET', path: '/nothing', status: 200, responseBody: '{}' })).toMatch(
      /expected 404/,
    );
    expect(mismatches({ method: 'PUT', path: '/tasks', status: 404 })).toMatch(/expected 405/);
    expect(
      mismatches({
        method: 'DELETE',
        path: '/tasks',
        status: 405,
        responseHeaders: { ...problemHeaders, allow: 'GET' },
      }),
    ).toMatch(/Allow is "GET"/);
  });

  it('takes a batch’s bad item when it is answered failed with a 4xx, not when it is enqueued', () => {
    const batch = (result: unknown) =>
      mismatches({
        method: 'POST',
        path: '/tasks/batch',
        requestContentType: 'application/json',
        requestBody: JSON.stringify({ tasks: [{ type: 'demo.echo' }, { type: 'demo.echo', priority: 0.5 }] }),
        status: 200,
        responseBody: JSON.stringify({
          results: [{ index: 0, outcome: 'created', status: 201, task }, result],
          created: 1,
          existing: 0,
          failed: 1,
        }),
      });
    expect(batch({ index: 1, outcome: 'failed', status: 400, problem: JSON.parse(problem(400)) })).toBe('');
    expect(batch({ index: 1, outcome: 'created', status: 201, task })).toMatch(
      /priority must be integer.*not answered failed with a 4xx/,
    );
  });
});
