/**
 * Serves the HTTP API locally: each HTTP request becomes the same API Gateway HTTP API (payload 2.0)
 * event the Lambda receives, and goes through the same handler. It also serves the web dashboard at `/`
 * (its files under /_dashboard/, paths no API route has), which calls this same API.
 *
 * The caller is taken from the `X-Leasehold-Owner` header (default `local`). That header is for local
 * development only: the Lambda API never reads it, and takes the caller from IAM authorization. The
 * local stack trusts every process on the machine (it runs as the developer); it refuses web pages:
 * a foreign Host, a cross-site state change, a form-encodable body (browser-guard.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { handleApiEvent, type ApiDeps, type ApiEvent } from '../../shared/api/api-handler.js';
import { problem } from '../../shared/api/http.js';
import { allowedHostsFor, browserRefusal } from './browser-guard.js';
import { MAX_BODY_BYTES } from '../../shared/api/request-schemas.js';
import { OWNER_HEADER } from '../../shared/api/caller.js';
import { isDashboardPath, serveDashboardAsset } from '../dashboard/dashboard-assets.js';
import type { DashboardPageOptions } from '../dashboard/dashboard-page.js';

export const DEFAULT_LOCAL_OWNER = 'local';

export interface LocalApiServer {
  url: string;
  close(): Promise<void>;
}

export interface LocalApiOptions {
  /** The dashboard served at `/` (default: one that calls this API), or false for none. */
  dashboard?: DashboardPageOptions | false;
  /** Host values answered besides the loopback names and the bound address (LEASEHOLD_ALLOWED_HOSTS). */
  allowedHosts?: readonly string[];
}

const LOCAL_DASHBOARD: DashboardPageOptions = { apiLabel: 'this local stack' };

export async function serveApi(
  deps: ApiDeps,
  port: number,
  host = '127.0.0.1',
  options: LocalApiOptions = {},
): Promise<LocalApiServer> {
  const dashboard = options.dashboard ?? LOCAL_DASHBOARD;
  // Filled once listening (port 0 picks one): nothing is answered before.
  let allowedHosts: ReadonlySet<string> = new Set();
  const server: Server = createServer((req, res) => {
    // No web page may use the developer's stack (browser-guard.ts): the page itself included.
    const refusal = browserRefusal(req.method ?? 'GET', req.headers, allowedHosts);
    if (refusal) {
      const response = problem(refusal.status, `LOCAL_${refusal.code}`, refusal.detail);
      res.writeHead(response.statusCode, response.headers);
      return res.end(response.body);
    }
    const url = requestUrl(req);
    if (!url) {
      const response = problem(
        400,
        'REQUEST_PATH_INVALID',
        `The request's path ${JSON.stringify(req.url)} cannot be read as a URL path; send one such as /health.`,
      );
      res.writeHead(response.statusCode, response.headers);
      return res.end(response.body);
    }
    if (dashboard && isDashboardPath(url.pathname))
      return serveDashboardAsset(req, res, url.pathname, dashboard);
    answer(req, res, url, deps).catch((error: unknown) => {
      // A client that went away mid-body (ECONNRESET, "aborted") rejects the body read: nobody is left to
      // answer, and this one request must not take the whole local stack down with an unhandled rejection.
      if (!res.headersSent && !res.destroyed) {
        const response = problem(
          400,
          'REQUEST_NOT_READ',
          `The request could not be read (${(error as Error)?.message ?? String(error)}); send it again.`,
        );
        res.writeHead(response.statusCode, response.headers);
        res.end(response.body);
      } else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  allowedHosts = allowedHostsFor(address.port, host, options.allowedHosts);
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The request's URL, or undefined when its path is not one: a path such as `//` or `//@` reads as a URL
 * with an empty host, which throws, and a throw here (outside any promise) would end the whole process.
 * (A try, not URL.parse: that needs Node 20.18, and this package runs on any Node 20.)
 */
function requestUrl(req: IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://localhost');
  } catch {
    return undefined;
  }
}

async function answer(req: IncomingMessage, res: ServerResponse, url: URL, deps: ApiDeps): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    // Stop keeping the body past the limit (the handler answers 413); the rest is read and dropped.
    if (size > MAX_BODY_BYTES + 1) tooLarge = true;
    else chunks.push(chunk as Buffer);
  }
  const response = tooLarge
    ? problem(
        413,
        'BODY_TOO_LARGE',
        `The body is over ${MAX_BODY_BYTES} bytes. Keep large data elsewhere and pass a reference.`,
      )
    : await handleApiEvent(toEvent(req, url, Buffer.concat(chunks)), deps);
  res.writeHead(response.statusCode, response.headers);
  res.end(response.body);
}

function toEvent(req: IncomingMessage, url: URL, body: Buffer): ApiEvent {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  const owner = headers[OWNER_HEADER]?.trim() || DEFAULT_LOCAL_OWNER;
  const query = Object.fromEntries(url.searchParams.entries());
  return {
    rawPath: url.pathname,
    headers,
    ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
    ...(body.length ? { body: body.toString('base64'), isBase64Encoded: true } : { isBase64Encoded: false }),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
      authorizer: {
        iam: {
          accessKey: '',
          accountId: 'local',
          callerId: owner,
          cognitoIdentity: null as never,
          principalOrgId: null as never,
          userArn: owner,
          userId: owner,
        },
      },
    },
  };
}
