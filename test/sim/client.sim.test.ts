/**
 * The HTTP client (leasehold/client) against the sim's API in the deployed shape: SigV4-signed with the
 * sim's 'admin' caller keys and region, a task run by the worker Lambda, a list across pages, and the
 * faults of a network injected by a proxy in front of the sim's API (the client signs for the proxy's
 * address; the proxy passes the Host header on untouched, so the sim checks the same signature).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createClient, type ClientOptions, type LeaseholdClient } from 'leasehold/client';
import { demoEcho } from '../../tasks/demo.js';
import { startFaultProxy, throttledProblem, type FaultProxy } from '../support/http-fault-proxy.js';
import { indexLagMaxMs, sim, sleep, waitFor } from './support/sim-client.js';

const proxies: FaultProxy[] = [];
afterAll(async () => {
  for (const p of proxies) await p.close();
});

/** The client as the 'admin' caller, at the sim's API or another URL in front of it. */
function adminClient(url = sim().apiUrl, extra: Partial<ClientOptions> = {}): LeaseholdClient {
  const info = sim();
  const admin = info.callers.find((c) => c.name === 'admin')!;
  return createClient({
    url,
    region: info.region,
    credentials: {
      accessKeyId: admin.accessKeyId,
      secretAccessKey: admin.secretAccessKey,
      ...(admin.sessionToken ? { sessionToken: admin.sessionToken } : {}),
    },
    retry: { baseMs: 20, maxMs: 200 },
    ...extra,
  });
}

async function proxy(): Promise<FaultProxy> {
  const p = await startFaultProxy(sim().apiUrl);
  proxies.push(p);
  return p;
}

/** Due in ten minutes: stays QUEUED while the test looks at it. */
const later = { delay: 600_000 };

describe('the client against the sim', () => {
  it('enqueue -> waitFor -> SUCCESS, signed as a sim caller', async () => {
    const client = adminClient();
    const marker = randomUUID();
    const { task, created } = await client.enqueue(demoEcho, { marker });
    expect(created).toBe(true);
    const done = await client.waitFor(task.id, { interval: 250, timeout: 150_000 });
    expect(done).toMatchObject({ status: 'SUCCESS', result: { marker } });
  });

  it('list iterates beyond one page', async () => {
    let listReads = 0;
    const counting: typeof fetch = (input, init) => {
      if (String(input).includes('/tasks?')) listReads++;
      return fetch(input, init);
    };
    const client = adminClient(sim().apiUrl, { fetch: counting });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.enqueue(demoEcho, { page: i }, later)).task.id);
    // Other scenarios enqueue as admin meanwhile: ours come in their order, newest first, among theirs.
    // The list reads an index, which shows a write after the index lag (as DynamoDB's GSIs): read it
    // again until every task is there.
    let found: string[] = [];
    await waitFor(
      'the five tasks listed',
      async () => {
        found = [];
        for await (const t of client.list({ type: 'demo.echo', status: 'QUEUED', pageSize: 2 })) {
          if (ids.includes(t.id)) found.push(t.id);
          if (found.length === ids.length) break;
        }
        return found.length === ids.length ? found : undefined;
      },
      10_000,
      250,
    );
    expect(found).toEqual([...ids].reverse());
    expect(listReads).toBeGreaterThanOrEqual(3);
  });

  it('a lost answer on POST does not make a duplicate', async () => {
    const p = await proxy();
    const client = adminClient(p.url);
    const marker = randomUUID();
    const since = Date.now() - 1_000;
    p.inject({ method: 'POST', path: /^\/tasks$/, fault: { kind: 'lose-answer' } });
    const { task, created } = await client.enqueue(demoEcho, { marker }, later);
    expect(created).toBe(true);
    const posts = p.seen.filter((r) => r.method === 'POST');
    expect(posts.map((r) => [r.action, r.status])).toEqual([
      ['lost-answer', 201],
      ['forwarded', 200],
    ]);
    // The task the lost answer carried is the one the client answered with.
    expect(JSON.parse(posts[0]!.answer!).task.id).toBe(task.id);
    // Exactly one task with this payload: every queued demo.echo since the test began, read back. The
    // list reads an index that shows writes after the index lag: read until ours is there, then once
    // more after the longest lag, by which a duplicate written beside it would be listed too.
    const queuedWithMarker = async () => {
      const mine: string[] = [];
      for await (const t of client.list({ type: 'demo.echo', status: 'QUEUED' })) {
        if (Date.parse(t.createdAt) < since) break;
        if (((await client.get(t.id)).payload as { marker?: string } | undefined)?.marker === marker)
          mine.push(t.id);
      }
      return mine;
    };
    await waitFor(
      'the task listed',
      async () => ((await queuedWithMarker()).length > 0 ? true : undefined),
      10_000,
      250,
    );
    await sleep(await indexLagMaxMs());
    const mine = await queuedWithMarker();
    expect(mine).toEqual([task.id]);
  });

  it('a throttled answer is sent again (503 THROTTLED, then API Gateway 429)', async () => {
    const p = await proxy();
    const client = adminClient(p.url);
    p.inject({ method: 'POST', fault: { kind: 'answer', status: 503, body: throttledProblem } });
    p.inject({
      method: 'POST',
      fault: { kind: 'answer', status: 429, body: { message: 'Too Many Requests' } },
    });
    const { task } = await client.enqueue(demoEcho, { throttled: true }, later);
    expect(p.seen.filter((r) => r.method === 'POST').map((r) => [r.action, r.status])).toEqual([
      ['answered', 503],
      ['answered', 429],
      ['forwarded', 201],
    ]);
    expect((await client.get(task.id)).status).toBe('QUEUED');
  });
});
