/** The HTTP API in the deployed shape: what API Gateway answers itself, IAM identities as owners, and the size limits. */
import { describe, expect, it } from 'vitest';
import { api, functionDenials, sim, simState, waitFor } from './support/sim-client.js';

describe('API Gateway answers these itself, never the function', () => {
  it('an unsigned request is 403 {"message":"Forbidden"}, also for /health', async () => {
    expect(await api('GET', '/health', undefined, null)).toMatchObject({
      status: 403,
      body: { message: 'Forbidden' },
    });
    expect(await api('POST', '/tasks', { type: 'demo.echo' }, null)).toMatchObject({
      status: 403,
      body: { message: 'Forbidden' },
    });
  });

  it('an unknown route or a method no route has is 404 {"message":"Not Found"}, before any authorization', async () => {
    expect(await api('GET', '/nope')).toMatchObject({ status: 404, body: { message: 'Not Found' } });
    expect(await api('DELETE', '/tasks')).toMatchObject({ status: 404, body: { message: 'Not Found' } });
    expect(await api('PATCH', '/health', undefined, null)).toMatchObject({
      status: 404,
      body: { message: 'Not Found' },
    });
  });

  it('a wrong signature or key is 403; a principal whose policy does not allow execute-api:Invoke is 403', async () => {
    expect((await api('GET', '/health')).status).toBe(200);
    const info = sim();
    const admin = info.callers.find((c) => c.name === 'admin')!;
    const forged = await fetch(new URL('health', info.apiUrl), {
      headers: {
        authorization: `AWS4-HMAC-SHA256 Credential=${admin.accessKeyId}/20261201/${info.region}/execute-api/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
        'x-amz-date': new Date().toISOString().replace(/[-:]|\.\d{3}/g, ''),
      },
    });
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { message: string }).message).toMatch(
      /signature we calculated does not match/,
    );
    expect(await api('GET', '/health', undefined, 'no-access')).toMatchObject({
      status: 403,
      body: { message: 'Forbidden' },
    });
  });

  it('a body over 10 MB is 413 from API Gateway', async () => {
    const answer = await api('POST', '/tasks', 'x'.repeat(10 * 1024 * 1024 + 1));
    expect(answer).toMatchObject({ status: 413, body: { message: 'Request Entity Too Large' } });
  });

  it('the caller is the signing principal: another caller cannot see the task; bad input is a 400 from the function', async () => {
    const created = await api(
      'POST',
      '/tasks',
      { type: 'demo.echo', payload: { owner: 'producer' } },
      'producer',
    );
    expect(created.status).toBe(201);
    const id = created.body.task.id as string;
    expect((await api('GET', `/tasks/${id}`, undefined, 'producer')).status).toBe(200);
    expect((await api('GET', `/tasks/${id}`, undefined, 'other')).status).toBe(404);
    // Every session of a role is one owner (stable across session names, and coarse).
    expect((await api('GET', `/tasks/${id}`, undefined, 'producer-session-2')).status).toBe(200);
    const bad = await api('POST', '/tasks', { type: 'demo.sleep', payload: { ms: 'soon' } }, 'producer');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/problem\+json/);
    expect(bad.body.errors[0]).toMatchObject({ field: 'payload.ms' });
  });

  it('a list of tasks with 250 KB payloads is one small page (lists carry no payloads); GET /tasks/{id} returns a payload whole from its own item', async () => {
    const big = 'y'.repeat(250 * 1024);
    const ids = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const res = await api(
        'POST',
        '/tasks',
        { type: 'demo.echo', payload: { i, big }, delaySeconds: 3600 },
        'other',
      );
      expect(res.status).toBe(201);
      ids.add(res.body.task.id as string);
    }
    // The list reads an index, which shows a write after the index lag (as DynamoDB's GSIs): read it
    // again until all 30 are there.
    let seen: string[] = [];
    let pages = 0;
    await waitFor(
      'the 30 tasks listed',
      async () => {
        seen = [];
        pages = 0;
        let cursor: string | undefined;
        do {
          const page = await api(
            'GET',
            `/tasks?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            undefined,
            'other',
          );
          expect(page.status).toBe(200);
          expect(JSON.stringify(page.body).length).toBeLessThan(200 * 1024);
          seen.push(...(page.body.tasks as { id: string }[]).map((t) => t.id));
          cursor = page.body.nextCursor;
          pages++;
        } while (cursor && pages < 10);
        return seen.filter((id) => ids.has(id)).length === ids.size ? true : undefined;
      },
      10_000,
      250,
    );
    expect(pages).toBe(1);
    expect(seen.filter((id) => ids.has(id)).sort()).toEqual([...ids].sort());
    const one = await api('GET', `/tasks/${[...ids][7]!}`, undefined, 'other');
    expect(one.status).toBe(200);
    expect(one.body.task).toMatchObject({ payload: { i: 7, big }, payloadBytes: expect.any(Number) });
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('every request the API function made was allowed by its role', async () => {
    expect(functionDenials(await simState())).toEqual([]);
  });
});

describe('GET /openapi.json in the deployed shape', () => {
  it('the API Lambda serves the generated document from the file its bundling copied next to it', async () => {
    const { readFile } = await import('node:fs/promises');
    const onDisk = JSON.parse(await readFile('docs/openapi.json', 'utf8'));
    const res = await api('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(onDisk);
    // Signed like every route: IAM guards it.
    expect((await api('GET', '/openapi.json', undefined, null)).status).toBe(403);
  });
});
