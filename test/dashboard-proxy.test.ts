/**
 * `leasehold dashboard`'s proxy at the HTTP level, in front of a small API that checks SigV4 signatures
 * (the sim's verifier): forwarded calls are signed for execute-api (a sim caller's keys for the sim's URL,
 * your AWS credentials for an execute-api URL, nothing for the local stack); answers pass through as they
 * are, problems included; it answers only the browser that opened its one-time sign-in link (a
 * session cookie): another local process gets nothing, the page included; and it refuses what another
 * web page could send: a foreign Origin or Host (DNS rebinding), a form's content type, a preflight, a
 * path that is not an API route (or no URL path).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { API_ROUTES } from '../shared/api/api-handler.js';
import { apiAccess } from '../tools/cli/cli-client.js';
import { listenRefusal, runDashboard } from '../tools/cli/dashboard-command.js';
import { UsageError } from '../tools/cli/usage-error.js';
import { sigv4Signer } from '../shared/client/sigv4.js';
import { isApiRoute } from '../tools/dashboard/api-routes.js';
import { startDashboardProxy } from '../tools/dashboard/dashboard-proxy.js';
import { allowedHostsFor } from '../tools/local/browser-guard.js';
import { verifySigV4 } from '../tools/sim/iam/sigv4-verifier.js';

const CALLER = { accessKeyId: 'AKIDSIMADMIN', secretAccessKey: 'sim-admin-secret' };
const PROBLEM = {
  type: 'about:blank',
  title: 'Bad Request',
  status: 400,
  code: 'VALIDATION_FAILED',
  detail: 'Fix these fields and send again: payload.ms Invalid input: expected number, received string.',
  errors: [{ field: 'payload.ms', message: 'Invalid input: expected number, received string' }],
};

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  verified: Awaited<ReturnType<typeof verifySigV4>>;
}

/** An API that checks each call's signature against the sim caller's keys, and answers by path. */
let upstream: Server;
let upstreamUrl: string;
const seen: Seen[] = [];
let dir: string;
let stop: AbortController;
let proxyUrl: string;
let signInUrl: string;
/** The session cookie the sign-in link gave this test's "browser" (`name=value`). */
let cookie: string;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const [path, query = ''] = (req.url ?? '/').split('?');
      const verified = await verifySigV4(
        { method: req.method!, path: path!, pathAsSent: true, query, headers: req.headers, body },
        (key) => (key === CALLER.accessKeyId ? CALLER : undefined),
        'execute-api',
      );
      seen.push({
        method: req.method!,
        path: req.url!,
        headers: req.headers,
        body: body.toString(),
        verified,
      });
      if (!verified.ok && req.headers.authorization) {
        res
          .writeHead(403, { 'content-type': 'application/json' })
          .end(JSON.stringify({ message: verified.message }));
        return;
      }
      if (req.method === 'POST' && path?.endsWith('/tasks')) {
        res
          .writeHead(400, {
            'content-type': 'application/problem+json',
            'x-amzn-requestid': 'abc',
            'set-cookie': 'a=b',
          })
          .end(JSON.stringify(PROBLEM));
        return;
      }
      if (path?.endsWith('/tasks/t-1/retry')) {
        res
          .writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '2' })
          .end(JSON.stringify({ ...PROBLEM, status: 503, code: 'THROTTLED', detail: 'Try again.' }));
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json', location: '/tasks/t-1' })
        .end(JSON.stringify({ path, query }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  // The sim's sim.json names its API URL (with a stage here) and its callers' keys.
  dir = await mkdtemp(join(tmpdir(), 'leasehold-dashboard-proxy-'));
  await writeFile(
    join(dir, 'sim.json'),
    JSON.stringify({
      apiUrl: `${upstreamUrl}/prod`,
      region: 'eu-west-3',
      callers: [{ name: 'admin', ...CALLER }],
    }),
  );
  stop = new AbortController();
  const lines: string[] = [];
  const running = runDashboard(
    { url: `${upstreamUrl}/prod`, port: '0' },
    { LEASEHOLD_SIM_FILE: join(dir, 'sim.json') },
    (line) => lines.push(line),
    stop.signal,
  );
  await vi.waitFor(() => expect(lines.join('\n')).toMatch(/Ctrl-C/), { timeout: 10_000 });
  expect(lines.join('\n')).toMatch(/signed \(SigV4, eu-west-3\) as the sim's caller "admin"/);
  signInUrl = /open (http:\/\/127\.0\.0\.1:\d+\/\?login=\S+)/.exec(lines[0]!)![1]!;
  proxyUrl = new URL('/', signInUrl).href;
  cookie = await signIn(signInUrl);
  void running;
});
afterEach(() => {
  seen.length = 0;
});
afterAll(async () => {
  stop?.abort();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

/** A raw request to the proxy: the path as written, any Host. */
function send(
  base: string,
  path: string,
  {
    method = 'GET',
    headers = {},
    body,
  }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Opens a sign-in link as a browser does: the session cookie it sets (`name=value`), after its redirect to /. */
async function signIn(link: string): Promise<string> {
  const res = await send(link, new URL(link).pathname + new URL(link).search);
  expect([res.status, res.headers.location]).toEqual([303, '/']);
  const setCookie = res.headers['set-cookie']![0]!;
  expect(setCookie).toMatch(/; HttpOnly; SameSite=Strict; Path=\/$/);
  return setCookie.split(';')[0]!;
}

const withSession = (extra: Record<string, string> = {}) => ({ cookie, ...extra });

describe('leasehold dashboard: forwarding', () => {
  it('signs each forwarded call with SigV4 for execute-api, keeping the stage path and the query', async () => {
    const res = await send(proxyUrl, '/tasks?status=FAILED&limit=25', { headers: withSession() });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ path: '/prod/tasks', query: 'status=FAILED&limit=25' });
    expect(res.headers.location).toBe('/tasks/t-1');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDSIMADMIN\/\d{8}\/eu-west-3\/execute-api\/aws4_request, SignedHeaders=/,
    );
    expect(seen[0]!.verified).toMatchObject({ ok: true, service: 'execute-api', region: 'eu-west-3' });
    // Nothing of the browser's own goes on: no session cookie.
    expect(seen[0]!.headers.cookie).toBeUndefined();
  });

  it('passes a problem through unchanged: status, content type, body; retry-after too', async () => {
    const body = JSON.stringify({ type: 'demo.sleep', payload: { ms: 'soon' } });
    const res = await send(proxyUrl, '/tasks', {
      method: 'POST',
      headers: withSession({ 'content-type': 'application/json' }),
      body,
    });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toEqual(PROBLEM);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(seen[0]!.body).toBe(body);
    expect(seen[0]!.headers.cookie).toBeUndefined();
    expect(seen[0]!.verified.ok).toBe(true);

    const throttled = await send(proxyUrl, '/tasks/t-1/retry', { method: 'POST', headers: withSession() });
    expect(throttled.status).toBe(503);
    expect(throttled.headers['retry-after']).toBe('2');
    expect(JSON.parse(throttled.body).code).toBe('THROTTLED');
  });

  it('forwards the API routes and nothing else: the list comes from the API handler', () => {
    for (const route of API_ROUTES)
      expect(
        isApiRoute(route.method, route.path.replace(/\{[^}]+\}/g, 'x')),
        `${route.method} ${route.path}`,
      ).toBe(true);
    expect(isApiRoute('GET', '/stats')).toBe(true);
    expect(isApiRoute('DELETE', '/tasks/x')).toBe(false);
    expect(isApiRoute('GET', '/tasks/x/y')).toBe(false);
    expect(isApiRoute('GET', '/tasks/')).toBe(false);
  });

  it('answers 502 with a problem when the API cannot be reached', async () => {
    const proxy = await startDashboardProxy({
      target: new URL('http://127.0.0.1:9/'),
      signer: undefined,
      port: 0,
      apiLabel: 'nowhere',
    });
    try {
      const own = await signIn(proxy.signInUrl);
      const res = await send(proxy.url, '/health', { headers: { cookie: own } });
      expect(res.status).toBe(502);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'DASHBOARD_UPSTREAM_UNREACHABLE' });
    } finally {
      await proxy.close();
    }
  });
});

describe('leasehold dashboard: who may use it', () => {
  it('another local user or process gets nothing without the session: not the page, not the API', async () => {
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/_dashboard/app.mjs'],
      ['GET', '/tasks'],
      ['POST', '/tasks/any-task-id/cancel'],
    ] as const) {
      for (const headers of [
        {},
        { cookie: `${cookie}x` },
        { cookie: `other=${cookie.split('=')[1]}` },
      ] as Record<string, string>[]) {
        const res = await send(proxyUrl, path, { method, headers });
        expect([res.status, JSON.parse(res.body).code], `${method} ${path}`).toEqual([
          401,
          'DASHBOARD_SIGN_IN_REQUIRED',
        ]);
      }
    }
    expect(seen).toEqual([]);
  });

  it('the link signs in one browser, once: a second gets 403, the first keeps its session', async () => {
    const again = await send(proxyUrl, new URL(signInUrl).pathname + new URL(signInUrl).search);
    expect([again.status, JSON.parse(again.body).code]).toEqual([403, 'DASHBOARD_SIGN_IN_SPENT']);
    expect(again.headers['set-cookie']).toBeUndefined();
    const guessed = await send(proxyUrl, '/?login=guess');
    expect(guessed.status).toBe(403);
    // The browser it signed in may open it again: on to the page, no new cookie.
    const reopened = await send(proxyUrl, new URL(signInUrl).pathname + new URL(signInUrl).search, {
      headers: withSession(),
    });
    expect([reopened.status, reopened.headers.location, reopened.headers['set-cookie']]).toEqual([
      303,
      '/',
      undefined,
    ]);
    const page = await send(proxyUrl, '/', { headers: withSession() });
    expect(page.status).toBe(200);
    expect(page.body).not.toContain(cookie.split('=')[1]);
  });
});

describe('leasehold dashboard: what another web page cannot do', () => {
  it('refuses a cross-site call even with the session (an older browser), and a form post, forwarding nothing', async () => {
    const crossSite = await send(proxyUrl, '/tasks/t-1/cancel', {
      method: 'POST',
      headers: withSession({ origin: 'https://evil.example' }),
    });
    expect([crossSite.status, JSON.parse(crossSite.body).code]).toEqual([
      403,
      'DASHBOARD_CROSS_SITE_REFUSED',
    ]);
    const form = await send(proxyUrl, '/tasks', {
      method: 'POST',
      headers: withSession({ 'content-type': 'text/plain' }),
      body: '{"type":"demo.echo"}',
    });
    expect([form.status, JSON.parse(form.body).code]).toEqual([415, 'DASHBOARD_CONTENT_TYPE_REFUSED']);
    expect(seen).toEqual([]);
  });

  it('never grants a CORS preflight; its own page is answered', async () => {
    const preflight = await send(proxyUrl, '/tasks', {
      method: 'OPTIONS',
      headers: withSession({
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      }),
    });
    expect(preflight.status).toBeGreaterThanOrEqual(400);
    expect(Object.keys(preflight.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const own = await send(proxyUrl, '/tasks', {
      headers: withSession({ origin: proxyUrl.replace(/\/$/, '') }),
    });
    expect(own.status).toBe(200);
    expect(seen).toHaveLength(1);
  });

  it('refuses a foreign Host (DNS rebinding), for the page as for the API, session or not', async () => {
    const { port } = new URL(proxyUrl);
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1.nip.io:${port}`, '127.0.0.1']) {
      for (const path of ['/', '/tasks']) {
        const res = await send(proxyUrl, path, { headers: withSession({ host }) });
        expect(res.status, `${host} ${path}`).toBe(403);
        expect(res.body).not.toContain(cookie.split('=')[1]);
      }
    }
    expect((await send(proxyUrl, '/', { headers: withSession({ host: `localhost:${port}` }) })).status).toBe(
      200,
    );
    expect(seen).toEqual([]);
  });

  it('on port 80, which browsers leave out of Host and Origin, answers the bare names too; elsewhere not', () => {
    expect([...allowedHostsFor(80)].sort()).toEqual([
      '127.0.0.1',
      '127.0.0.1:80',
      '[::1]',
      '[::1]:80',
      'localhost',
      'localhost:80',
    ]);
    expect([...allowedHostsFor(8080)].sort()).toEqual(['127.0.0.1:8080', '[::1]:8080', 'localhost:8080']);
  });

  it('refuses paths that are not API routes, encoded traversal included', async () => {
    for (const [method, path] of [
      ['GET', '/admin'],
      ['GET', '/../../etc/passwd'],
      ['GET', '/tasks/a/b/c'],
      ['DELETE', '/tasks/t-1'],
      ['GET', '/%2e%2e/%2e%2e/package.json'],
      ['GET', '/_dashboard/../package.json'],
      ['GET', '/schedules/x/..%2f..%2fadmin'],
    ] as const) {
      const res = await send(proxyUrl, path, { method, headers: withSession() });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect(seen).toEqual([]);
  });

  it('answers 400 to a path that is no URL path (`//` reads as a URL without a host), and keeps answering', async () => {
    for (const path of ['//', '///', '//@']) {
      const res = await send(proxyUrl, path, { headers: withSession() });
      expect(res.status, path).toBe(400);
      expect(JSON.parse(res.body), path).toMatchObject({
        code: 'DASHBOARD_PATH_INVALID',
        detail: expect.stringContaining(JSON.stringify(path)),
      });
    }
    expect(seen).toEqual([]);
    expect((await send(proxyUrl, '/health', { headers: withSession() })).status).toBe(200);
  });
});

describe('leasehold dashboard: how it signs, and its options', () => {
  it('an execute-api URL is signed with the AWS credentials of the environment, for its region', async () => {
    const url = 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod';
    const access = apiAccess(url, {}, {});
    expect(access).toMatchObject({ region: 'eu-west-1', credentials: undefined, local: false });
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDFROMENV');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret-from-env');
    const forwarded: Request[] = [];
    const proxy = await startDashboardProxy({
      target: new URL(url),
      signer: sigv4Signer(access.region!, access.credentials),
      port: 0,
      apiLabel: url,
      fetch: async (input, init) => {
        forwarded.push(new Request(input, init));
        return new Response('{"status":"ok"}', { headers: { 'content-type': 'application/json' } });
      },
    });
    try {
      const own = await signIn(proxy.signInUrl);
      const res = await send(proxy.url, '/health', { headers: { cookie: own } });
      expect(res.status).toBe(200);
      expect(forwarded[0]!.url).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com/prod/health');
      expect(forwarded[0]!.headers.get('authorization')).toMatch(
        /Credential=AKIDFROMENV\/\d{8}\/eu-west-1\/execute-api\/aws4_request/,
      );
    } finally {
      vi.unstubAllEnvs();
      await proxy.close();
    }
  });

  it('--region signs a URL that names none (a custom domain); the local stack is not signed, --owner is its caller', () => {
    expect(apiAccess('https://queue.example.com', { region: 'us-east-2' }, {})).toMatchObject({
      region: 'us-east-2',
      local: false,
    });
    expect(apiAccess('http://127.0.0.1:3000', { owner: 'me' }, {})).toEqual({
      region: undefined,
      credentials: undefined,
      owner: 'me',
      local: true,
    });
  });

  it('bad options say what to fix', async () => {
    const run = (flags: Record<string, string>) => runDashboard(flags, {}, () => {}, AbortSignal.abort());
    await expect(run({})).rejects.toThrow(/--url is required/);
    await expect(run({ url: 'ftp://x' })).rejects.toThrow(/--url must be an http\(s\) URL/);
    await expect(run({ url: 'http://127.0.0.1:3000', port: '70000' })).rejects.toThrow(
      /--port must be a whole number/,
    );
    await expect(run({ url: 'http://127.0.0.1:3000', port: 'x' })).rejects.toThrow(
      /--port must be a whole number/,
    );
    await expect(run({ url: 'http://127.0.0.1:3000', region: 'Frankfurt' })).rejects.toThrow(
      /--region must be an AWS region/,
    );
    const { port } = new URL(proxyUrl);
    await expect(run({ url: 'http://127.0.0.1:3000', port })).rejects.toThrow(`port ${port} is in use`);
    // A usage error (the CLI prints it with the usage and exits 2), naming the callers the sim has.
    const unknownCaller = runDashboard(
      { url: `${upstreamUrl}/prod`, port: '0', as: 'nobody' },
      { LEASEHOLD_SIM_FILE: join(dir, 'sim.json') },
      () => {},
      AbortSignal.abort(),
    );
    await expect(unknownCaller).rejects.toThrow(
      new UsageError('the sim has no caller "nobody": pass --as with one of its callers, admin'),
    );
    await expect(unknownCaller).rejects.toBeInstanceOf(UsageError);
  });

  it('a port it may not listen on says what to pass instead', () => {
    // Binding a port below 1024 fails only without root (tests may run as root): the error is made up.
    const refusal = listenRefusal(Object.assign(new Error('listen EACCES'), { code: 'EACCES' }), 80);
    expect(refusal).toBeInstanceOf(UsageError);
    expect(refusal?.message).toMatch(/port 80 .*pass --port N above 1023, or 0/);
    expect(listenRefusal(Object.assign(new Error('x'), { code: 'EADDRINUSE' }), 3001)?.message).toMatch(
      /port 3001 is in use/,
    );
    expect(listenRefusal(new Error('something else'), 3001)).toBeUndefined();
  });
});
