/**
 * The dashboard's files: served from a fixed map of URL to file (the page, its modules and stylesheet,
 * the vendored preact, preact/hooks and htm), with the right content types; any other path, however
 * encoded, is a 404 and never a file from elsewhere. The local stack's server serves the page at `/`
 * beside the API, whose routes answer as before.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../shared/api/api-handler.js';
import { assetPaths, isDashboardPath, serveDashboardAsset } from '../tools/dashboard/dashboard-assets.js';
import { ASSET_PREFIX, dashboardPage, VENDOR_MODULES } from '../tools/dashboard/dashboard-page.js';
import { serveApi, type LocalApiServer } from '../tools/local/http-bridge.js';

const PUBLIC_DIR = fileURLToPath(new URL('../tools/dashboard/public/', import.meta.url));
let server: Server;
let base: string;
let bridge: LocalApiServer;

beforeAll(async () => {
  server = createServer((req, res) => {
    const { pathname } = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (isDashboardPath(pathname)) return serveDashboardAsset(req, res, pathname, { apiLabel: 'test <api>' });
    res.writeHead(418).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The API's routes used here (/health, an unknown path) read nothing from the deps.
  bridge = await serveApi({ logger: { error() {} } } as unknown as ApiDeps, 0);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await bridge.close();
});

/** A GET with the path sent exactly as written (fetch would resolve dot segments first). */
function rawGet(
  url: string,
  path: string,
): Promise<{ status: number; type: string | undefined; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the dashboard assets', () => {
  it('serves the page with its import map, the API label and token escaped, and a strict CSP', async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    const html = await res.text();
    const importMap = JSON.parse(/<script type="importmap">(.*?)<\/script>/s.exec(html)![1]!);
    expect(importMap).toEqual({ imports: VENDOR_MODULES });
    expect(html).toContain('<meta name="leasehold-api" content="test &lt;api&gt;" />');
    // No secret in the page: `leasehold dashboard` admits its browser by an HttpOnly cookie.
    expect(html).not.toMatch(/token/i);
    expect(html).toContain('<link rel="icon" href="data:," />');
    // Nothing from another host: the page works offline.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it("puts a label with replacement patterns ($&, $`, $') in as written, splicing nothing of the page", () => {
    const apiLabel = "https://x.example/$'/$&/$`/$$";
    const { html } = dashboardPage({ apiLabel });
    expect(html).toContain('<meta name="leasehold-api" content="https://x.example/$&#39;/$&amp;/$`/$$" />');
    expect(html).not.toContain('%API_LABEL%');
    expect(html.match(/<meta name="leasehold-api"/g)).toHaveLength(1);
    expect(html.match(/<\/html>/g)).toHaveLength(1);
  });

  it('serves every file of public/ and the three vendored modules, with their content types', async () => {
    const served = assetPaths();
    for (const file of readdirSync(PUBLIC_DIR).filter((f) => f !== 'index.html'))
      expect(served).toContain(`${ASSET_PREFIX}${file}`);
    for (const path of served.filter((p) => p !== '/')) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toBe(
        path.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
      );
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    for (const [specifier, url] of Object.entries(VENDOR_MODULES)) {
      const file = fileURLToPath(import.meta.resolve(specifier));
      expect(await (await fetch(`${base}${url}`)).text()).toBe(readFileSync(file, 'utf8'));
    }
  });

  it('answers 404 for any other path under the prefix, however it is encoded; 405 for other methods', async () => {
    for (const path of [
      '/_dashboard/nope.mjs',
      '/_dashboard/index.html',
      '/_dashboard/../package.json',
      '/_dashboard/%2e%2e/package.json',
      '/_dashboard/%2E%2E/%2E%2E/package.json',
      '/_dashboard/..%2fpackage.json',
      '/_dashboard/..%5cpackage.json',
      '/_dashboard/vendor/../../package.json',
      '/_dashboard/vendor/preact.mjs/../../../package.json',
      '/_dashboard//etc/passwd',
      '/_dashboard/%00',
    ]) {
      const res = await rawGet(base, path);
      // Either not the dashboard's at all (the test server's 418) or its 404: never a file.
      expect([404, 418], path).toContain(res.status);
      expect(res.body, path).not.toMatch(/"name": "leasehold"|root:/);
    }
    expect((await fetch(`${base}/`, { method: 'POST' })).status).toBe(405);
  });

  it('the local stack serves the page at / and keeps answering the API routes', async () => {
    const page = await fetch(`${bridge.url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('content="this local stack"');
    expect((await fetch(`${bridge.url}/_dashboard/app.mjs`)).headers.get('content-type')).toBe(
      'text/javascript; charset=utf-8',
    );
    expect((await fetch(`${bridge.url}/health`)).status).toBe(200);
    const traversal = await rawGet(bridge.url, '/../package.json');
    expect(traversal.status).toBe(404);
    expect(JSON.parse(traversal.body).code).toBe('ROUTE_NOT_FOUND');
  });
});
