/**
 * `leasehold dashboard --url <the sim's API>` in the deployed shape: the dashboard's server forwards the
 * page's calls through the sim's API Gateway (IAM auth, SigV4 with a sim caller's keys) to the API
 * Lambda, whose GET /stats reads what the worker Lambda's invocations flushed. What the browser suite
 * shows against the local stack, here through the real route, signature and function.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { sigv4Signer } from '../../shared/client/sigv4.js';
import { startDashboardProxy, type DashboardProxy } from '../../tools/dashboard/dashboard-proxy.js';
import { api, sim } from './support/sim-client.js';

/**
 * The caller the dashboard signs as. Scenarios run concurrently; the only other one that enqueues as
 * this caller delays its tasks an hour (api-gateway.sim.test.ts), so the successes counted here are
 * this file's own.
 */
const CALLER = 'other';

let proxy: DashboardProxy;
/** The session cookie the sign-in link gave this test's browser. */
let session: string;
beforeAll(async () => {
  const info = sim();
  const caller = info.callers.find((c) => c.name === CALLER)!;
  proxy = await startDashboardProxy({
    target: new URL(info.apiUrl),
    signer: sigv4Signer(info.region, {
      accessKeyId: caller.accessKeyId,
      secretAccessKey: caller.secretAccessKey,
      ...(caller.sessionToken ? { sessionToken: caller.sessionToken } : {}),
    }),
    port: 0,
    apiLabel: info.apiUrl,
  });
  const signedIn = await fetch(proxy.signInUrl, { redirect: 'manual' });
  session = signedIn.headers.get('set-cookie')!.split(';')[0]!;
});
afterAll(async () => {
  await proxy?.close();
});

/** A call as the dashboard's page makes it: to its own server, with the session its browser was given. */
async function page(method: string, path: string, body?: unknown, cookie = session) {
  const res = await fetch(new URL(path.replace(/^\//, ''), proxy.url), {
    method,
    headers: {
      cookie,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: (await res.json()) as any };
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('the dashboard against the sim', () => {
  it('serves its page to the signed-in browser, and forwards /stats signed: the owner is the signing caller', async () => {
    const html = await (await fetch(proxy.url, { headers: { cookie: session } })).text();
    expect(html).toContain('<meta name="leasehold-api"');
    const stats = await page('GET', '/stats');
    expect(stats.status).toBe(200);
    // The same owner the API answers a direct signed call with: the caller comes from the signature.
    const direct = await api('GET', '/stats', undefined, CALLER);
    expect(direct.status).toBe(200);
    expect(stats.body.owner).toBe(direct.body.owner);
    expect(stats.body.owner).toMatch(/^arn:aws:iam::\d+:user\/sim-other$/);
  });

  it('a task enqueued through the dashboard runs on the worker Lambda, and its success is counted once in /stats', async () => {
    const succeeded = async () => {
      const s = await page('GET', '/stats');
      return (s.body.minutes as { types: Record<string, { succeeded: number }> }[]).reduce(
        (n, m) => n + (m.types['demo.echo']?.succeeded ?? 0),
        0,
      );
    };
    const before = await succeeded();
    const marker = randomUUID();
    const created = await page('POST', '/tasks', { type: 'demo.echo', payload: { marker } });
    expect(created.status).toBe(201);
    const id = created.body.task.id as string;
    const done = await until(
      async () => {
        const t = await page('GET', `/tasks/${id}`);
        return t.body.task?.status === 'SUCCESS' ? t.body.task : undefined;
      },
      150_000,
      'the task to succeed',
    );
    expect(done.result).toEqual({ marker });
    // The invocation that ran it writes its counts when it returns (Lambda freezes the process after), or
    // from its heartbeat once a minute while it keeps running (other scenarios keep workers busy): so
    // within the flush interval (60 s), a heartbeat (10 s) and a margin.
    const counted = await until(
      async () => ((await succeeded()) > before ? await succeeded() : undefined),
      90_000,
      'the success to be counted',
    );
    expect(counted).toBe(before + 1);

    // A refused action: the API's problem reaches the page unchanged.
    const refused = await page('POST', `/tasks/${id}/cancel`);
    expect(refused.status).toBe(409);
    expect(refused.type).toContain('application/problem+json');
    expect(refused.body).toMatchObject({ status: 409, taskStatus: 'SUCCESS' });
    expect(refused.body.detail).toEqual(expect.any(String));
  });

  it('a call without the session (another local process) is refused and never reaches the API', async () => {
    const marker = randomUUID();
    const refused = await page(
      'POST',
      '/tasks',
      { type: 'demo.echo', payload: { marker } },
      'not=the-session',
    );
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('DASHBOARD_SIGN_IN_REQUIRED');
    const listed = await api('GET', '/tasks?type=demo.echo&limit=100');
    expect(JSON.stringify(listed.body.tasks)).not.toContain(marker);
  });
});
