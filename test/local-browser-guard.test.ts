/**
 * No web page may use the developer's local stack (review 2, finding 2): the rules (browser-guard.ts)
 * with fixed headers, then the requests `repro/local-csrf.ts` sends, byte for byte as a browser sends
 * them, against `leasehold serve`'s bridge: a cross-site form POST to cancel a task with a predictable
 * id, and a DNS-rebinding page (Host evil.example) reading tasks, enqueueing and loading the dashboard.
 * The CLI's, the clients' and the stack's own page's requests still pass.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotentTaskId } from '../shared/ids.js';
import { allowedHostsFor, browserRefusal } from '../tools/local/browser-guard.js';
import { serveApi, type LocalApiServer } from '../tools/local/http-bridge.js';
import { demoTasks } from '../tasks/demo.js';
import { startTestDynamo, type TestDynamo } from './support/test-dynamo.js';
import { createWorkerWorld, silentLogger, type WorkerWorld } from './support/worker-world.js';

describe('browserRefusal', () => {
  const hosts = allowedHostsFor(3000);

  it('answers to the loopback names on its port only (and the bound address when specific)', () => {
    expect([...hosts]).toEqual(['127.0.0.1:3000', 'localhost:3000', '[::1]:3000']);
    expect([...allowedHostsFor(3000, '0.0.0.0')]).toEqual([...hosts]);
    expect(allowedHostsFor(3000, '192.168.1.5').has('192.168.1.5:3000')).toBe(true);
    expect(allowedHostsFor(80).has('localhost')).toBe(true);
    expect(allowedHostsFor(3000, '127.0.0.1', ['MyHost:8080']).has('myhost:8080')).toBe(true);
    for (const host of ['evil.example:3000', '127.0.0.1:3001', '127.0.0.1', undefined])
      expect(browserRefusal('GET', { host }, hosts)?.code).toBe('HOST_REFUSED');
    expect(browserRefusal('GET', { host: 'LOCALHOST:3000' }, hosts)).toBeUndefined();
  });

  it('refuses a state change from another origin or site, and a form-encodable body', () => {
    const own = { host: '127.0.0.1:3000' };
    const refused = (method: string, headers: Record<string, string>) =>
      browserRefusal(method, { ...own, ...headers }, hosts)?.code;
    expect(refused('POST', { origin: 'https://evil.example' })).toBe('CROSS_SITE_REFUSED');
    expect(refused('DELETE', { origin: 'null' })).toBe('CROSS_SITE_REFUSED');
    expect(refused('POST', { 'sec-fetch-site': 'cross-site' })).toBe('CROSS_SITE_REFUSED');
    // Another port on the same machine is the same site, not the same origin.
    expect(refused('PUT', { 'sec-fetch-site': 'same-site' })).toBe('CROSS_SITE_REFUSED');
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])
      expect(refused('POST', { 'content-type': type })).toBe('CONTENT_TYPE_REFUSED');
    // What the stack's own page, the CLI, curl and the clients send.
    expect(
      refused('POST', { origin: 'http://127.0.0.1:3000', 'sec-fetch-site': 'same-origin' }),
    ).toBeUndefined();
    expect(refused('POST', { 'content-type': 'application/json' })).toBeUndefined();
    expect(refused('POST', {})).toBeUndefined();
    // A read from another site is answered (the browser keeps its answer from that site).
    expect(
      refused('GET', { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }),
    ).toBeUndefined();
  });
});

describe('the local stack against web pages', () => {
  let dynamo: TestDynamo;
  let world: WorkerWorld;
  let api: LocalApiServer;
  let port: number;
  beforeAll(async () => {
    dynamo = await startTestDynamo();
    world = await createWorkerWorld(dynamo.endpoint, demoTasks);
    api = await serveApi({ ...world, logger: silentLogger() }, 0);
    port = Number(new URL(api.url).port);
  });
  afterAll(async () => {
    await api.close();
    await dynamo.close();
  });

  const send = (method: string, path: string, headers: Record<string, string>, body?: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('a cross-site form POST cannot cancel a task whose id it can predict', async () => {
    await world.submitter.enqueue({
      type: 'demo.sleep',
      owner: 'local',
      payload: { ms: 1000 },
      idempotencyKey: 'nightly-report',
      delayMs: 60_000,
    });
    const victim = idempotentTaskId('local', 'nightly-report');
    const own = `127.0.0.1:${port}`;
    // <form method=post action=".../cancel" enctype=text/plain> on evil.example
    const form = await send('POST', `/tasks/${victim}/cancel`, {
      host: own,
      origin: 'https://evil.example',
      'content-type': 'text/plain',
      'sec-fetch-site': 'cross-site',
    });
    expect(form.status).toBe(403);
    expect(JSON.parse(form.body).code).toBe('LOCAL_CROSS_SITE_REFUSED');
    // fetch(url, {method: 'POST', mode: 'no-cors'}) from an older browser: Origin only.
    expect(
      (await send('POST', `/tasks/${victim}/retry`, { host: own, origin: 'https://evil.example' })).status,
    ).toBe(403);
    expect((await world.store.get({ id: victim, owner: 'local' })).status).toBe('QUEUED');
    // The CLI's cancel (no Origin, no body) still works.
    const cli = await send('POST', `/tasks/${victim}/cancel`, { host: own });
    expect([cli.status, JSON.parse(cli.body).task.status]).toEqual([200, 'CANCELLED']);
  });

  it('a DNS-rebinding page (Host evil.example) reads, enqueues and loads nothing', async () => {
    const host = `evil.example:${port}`;
    const before = (await world.store.list({ owner: 'local' })).tasks.length;
    const answers = [
      await send('GET', '/tasks', { host, origin: `http://${host}` }),
      await send('GET', '/tasks', { host, 'x-leasehold-owner': 'someone-else' }),
      await send(
        'POST',
        '/tasks',
        { host, origin: `http://${host}`, 'content-type': 'application/json' },
        JSON.stringify({ type: 'demo.echo', payload: 'from evil.example' }),
      ),
      await send('GET', '/', { host }),
    ];
    expect(answers.map((a) => [a.status, JSON.parse(a.body).code])).toEqual(
      Array.from({ length: 4 }, () => [403, 'LOCAL_HOST_REFUSED']),
    );
    expect((await world.store.list({ owner: 'local' })).tasks.length).toBe(before);
  });

  it("the stack's own page and a same-origin call are answered", async () => {
    const host = `localhost:${port}`;
    expect((await send('GET', '/', { host })).status).toBe(200);
    const created = await send(
      'POST',
      '/tasks',
      {
        host,
        origin: `http://${host}`,
        'sec-fetch-site': 'same-origin',
        'content-type': 'application/json',
      },
      JSON.stringify({ type: 'demo.echo', payload: 'from the page' }),
    );
    expect(created.status).toBe(201);
  });
});
