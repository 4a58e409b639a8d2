/**
 * The dashboard's files, served to a `node:http` request by the local stack and by `leasehold dashboard`.
 *
 * What may be served is a fixed map from URL to file, built once from the files of `public/` and the three
 * vendored modules (resolved through their packages' `exports`): a request's path is looked up in the map,
 * never joined onto a directory, so no path a browser sends can reach another file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ASSET_PREFIX, dashboardPage, VENDOR_MODULES, type DashboardPageOptions } from './dashboard-page.js';
import { isMissingPackage, toolPackageMissing, ToolPackageMissingError } from '../tool-packages.js';

const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * The import map's targets are the packages' ES module builds, found through their `exports` (preact 11:
 * dist/preact.mjs and hooks/dist/hooks.mjs; htm: dist/htm.mjs).
 */
function resolvePackageFile(specifier: string): string {
  try {
    return fileURLToPath(import.meta.resolve(specifier));
  } catch (error) {
    const name = specifier.startsWith('htm') ? 'htm' : 'preact';
    throw isMissingPackage(error, name) ? toolPackageMissing(name, 'The web dashboard') : error;
  }
}

/** URL path -> file on disk: the whole of what this module serves besides the page itself. */
function buildAssetMap(): Map<string, string> {
  const map = new Map<string, string>();
  for (const [specifier, url] of Object.entries(VENDOR_MODULES)) map.set(url, resolvePackageFile(specifier));
  for (const entry of readdirSync(PUBLIC_DIR, { withFileTypes: true }))
    if (entry.isFile() && CONTENT_TYPES[extname(entry.name)])
      map.set(`${ASSET_PREFIX}${entry.name}`, join(PUBLIC_DIR, entry.name));
  return map;
}

let assetMap: Map<string, string> | undefined;

/** The URL paths served (for tests and diagnostics). */
export function assetPaths(): string[] {
  assetMap ??= buildAssetMap();
  return ['/', ...assetMap.keys()];
}

/** True for the paths the dashboard answers (its page and its files); every other path is the API's. */
export function isDashboardPath(pathname: string): boolean {
  return pathname === '/' || pathname.startsWith(ASSET_PREFIX);
}

/**
 * Answers a GET or HEAD of the page or one of its files; 404 for any other path under the prefix, 405 for
 * another method. `pathname` must be the request's path after URL parsing (dot segments resolved).
 */
export function serveDashboardAsset(
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  page: DashboardPageOptions,
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
    res.end('The dashboard serves its files with GET only.\n');
    return;
  }
  try {
    assetMap ??= buildAssetMap();
  } catch (error) {
    // preact or htm not installed (optional peers): the page cannot run; say what to install, and keep
    // the server (the local stack's API shares it) up.
    if (!(error instanceof ToolPackageMissingError)) throw error;
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
    res.end(`${error.message}\n`);
    return;
  }
  if (pathname === '/') {
    const { html, contentSecurityPolicy } = dashboardPage(page);
    send(req, res, 'text/html; charset=utf-8', Buffer.from(html), {
      'content-security-policy': contentSecurityPolicy,
      // Always the current page (its labels and import map): never kept by a cache.
      'cache-control': 'no-store',
    });
    return;
  }
  const file = assetMap.get(pathname);
  if (!file) {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
    res.end(`No dashboard file ${pathname}.\n`);
    return;
  }
  send(req, res, CONTENT_TYPES[extname(file)]!, readFileSync(file), { 'cache-control': 'no-cache' });
}

function send(
  req: IncomingMessage,
  res: ServerResponse,
  contentType: string,
  body: Buffer,
  headers: Record<string, string>,
): void {
  res.writeHead(200, {
    'content-type': contentType,
    'content-length': body.length,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...headers,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
