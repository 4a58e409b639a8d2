/**
 * `leasehold dashboard`'s server: serves the dashboard on 127.0.0.1 and forwards the page's API calls to
 * the deployed API (or the sim's), each signed with SigV4 by the client's own signer, and passes the
 * answer through unchanged (status, content-type, retry-after, location, allow and the body), so the
 * API's problem messages reach the page as they are.
 *
 * This server signs with the user's AWS credentials, so no other web page the user visits may use it:
 * - it listens on 127.0.0.1 only;
 * - it refuses a request whose Host is not 127.0.0.1:<port> or localhost:<port> (DNS rebinding: a
 *   hostile name resolved to 127.0.0.1 reaches the port, but sends its own name as Host; on port 80,
 *   which browsers leave out, the bare names too);
 * - every forwarded call carries a random per-process token in a custom header. The token is written
 *   into the page only, which another site cannot read; and a cross-site script cannot set a custom
 *   header without a CORS preflight, which this server never grants;
 * - a call whose Origin is another site's is refused as well, token or not;
 * - it forwards the API's routes only (api-routes.ts), and nothing of the browser's own headers but
 *   accept and content-type.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { problem, type ApiResponse } from '../api/http.js';
import { OWNER_HEADER } from '../api/caller.js';
import type { RequestSigner } from '../client/sigv4.js';
import { describeNetworkError } from '../client/http-transport.js';
import { isApiRoute } from './api-routes.js';
import { isDashboardPath, serveDashboardAsset } from './dashboard-assets.js';
import { DASHBOARD_TOKEN_HEADER } from './dashboard-page.js';

/** API Gateway gives up on an integration after 30 s; a forwarded call is given a little longer. */
const FORWARD_TIMEOUT_MS = 35_000;
/** API Gateway's own limit is 10 MB and the API's 256 KB: a larger body is refused here, unread. */
const MAX_FORWARDED_BODY_BYTES = 1024 * 1024;
/** The answer headers the page needs; the rest (API Gateway's own, cookies) stay behind. */
const PASSED_BACK_HEADERS = ['content-type', 'retry-after', 'location', 'allow'];

export interface DashboardProxyOptions {
  /** The API's base URL (a stage path is kept). */
  target: URL;
  /** Signs each forwarded call (SigV4 for execute-api); none against the local stack. */
  signer: RequestSigner | undefined;
  /** Sent as X-Leasehold-Owner: the local stack's caller only (AWS takes the caller from the signature). */
  owner?: string | undefined;
  /** 0 picks a free port. */
  port: number;
  /** What the page says it is connected to. */
  apiLabel: string;
  fetch?: typeof fetch;
}

export interface DashboardProxy {
  url: string;
  /** The token the page sends (exposed for tests; it is in the served page). */
  token: string;
  close(): Promise<void>;
}

export async function startDashboardProxy(options: DashboardProxyOptions): Promise<DashboardProxy> {
  const token = randomBytes(32).toString('base64url');
  const state = { token, allowedHosts: new Set<string>() };
  const server = createServer((req, res) => {
    answer(req, res, options, state).catch((error: unknown) => {
      if (res.headersSent || res.destroyed) res.destroy();
      else
        reply(
          res,
          problem(
            500,
            'DASHBOARD_PROXY_FAILED',
            `The dashboard could not answer: ${describeNetworkError(error)}.`,
          ),
        );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  for (const host of allowedHostsFor(port)) state.allowedHosts.add(host);
  return {
    url: `http://127.0.0.1:${port}/`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The Host (and Origin, less its scheme) values of this server's own page on `port`. A browser leaves
 * the scheme's default port out of both, so on port 80 the page names the bare host.
 */
export function allowedHostsFor(port: number): Set<string> {
  const hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  if (port === 80) hosts.add('127.0.0.1').add('localhost');
  return hosts;
}

/** The request's URL, or undefined when its path is not one (`//` reads as a URL with no host: a throw). */
function requestUrl(req: IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://127.0.0.1');
  } catch {
    return undefined;
  }
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  options: DashboardProxyOptions,
  state: { token: string; allowedHosts: Set<string> },
): Promise<void> {
  const host = (req.headers.host ?? '').toLowerCase();
  if (!state.allowedHosts.has(host))
    return reply(
      res,
      problem(
        403,
        'DASHBOARD_HOST_REFUSED',
        `This dashboard answers only to ${[...state.allowedHosts].join(' or ')} (the request named "${host}").`,
      ),
    );
  // Parsing resolves dot segments, percent-encoded ones too: the path matched below is the one forwarded.
  const url = requestUrl(req);
  if (!url)
    return reply(
      res,
      problem(
        400,
        'DASHBOARD_PATH_INVALID',
        `The request's path ${JSON.stringify(req.url)} cannot be read as a URL path; the dashboard is at /.`,
      ),
    );
  const { pathname, search } = url;
  const method = req.method ?? 'GET';
  if (isDashboardPath(pathname))
    return serveDashboardAsset(req, res, pathname, { apiLabel: options.apiLabel, token: state.token });
  if (!isApiRoute(method, pathname))
    return reply(
      res,
      problem(
        404,
        'DASHBOARD_NOT_FORWARDED',
        `${method} ${pathname} is not a route of the API; the dashboard forwards the API's routes only.`,
      ),
    );
  const refusal = crossSiteRefusal(req, state);
  if (refusal) return reply(res, problem(403, 'DASHBOARD_TOKEN_REQUIRED', refusal));
  const body = await readBody(req);
  if (body === undefined)
    return reply(
      res,
      problem(413, 'BODY_TOO_LARGE', `The body is over ${MAX_FORWARDED_BODY_BYTES} bytes; it was not sent.`),
    );
  await forward(res, options, method, pathname + search, body, req.headers);
}

/** Why a call may not be forwarded (another site's page, or no token), or undefined when it may. */
function crossSiteRefusal(req: IncomingMessage, state: { token: string; allowedHosts: Set<string> }) {
  const origin = req.headers.origin;
  if (origin !== undefined && !state.allowedHosts.has(origin.replace(/^http:\/\//, '').toLowerCase()))
    return `Calls from ${origin} are refused: only the dashboard's own page may call it.`;
  const sent = Buffer.from(String(req.headers[DASHBOARD_TOKEN_HEADER] ?? ''));
  const expected = Buffer.from(state.token);
  if (sent.length !== expected.length || !timingSafeEqual(sent, expected))
    return `Calls need the dashboard's token in ${DASHBOARD_TOKEN_HEADER}: open the dashboard's page and use it from there.`;
  return undefined;
}

async function forward(
  res: ServerResponse,
  options: DashboardProxyOptions,
  method: string,
  pathAndQuery: string,
  body: Buffer,
  incoming: IncomingMessage['headers'],
): Promise<void> {
  const basePath = options.target.pathname.replace(/\/+$/, '');
  // Joined as text, not resolved as a relative URL: the path was checked against the routes as it is.
  const url = new URL(`${options.target.origin}${basePath}${pathAndQuery}`);
  const text = body.length > 0 ? body.toString('utf8') : undefined;
  let headers: Record<string, string> = {
    accept: incoming.accept ?? 'application/json, application/problem+json',
    ...(text === undefined ? {} : { 'content-type': incoming['content-type'] ?? 'application/json' }),
    ...(options.owner ? { [OWNER_HEADER]: options.owner } : {}),
  };
  if (options.signer) {
    try {
      headers = await options.signer(url, { method, headers, ...(text === undefined ? {} : { body: text }) });
    } catch (error) {
      return reply(
        res,
        problem(
          500,
          'DASHBOARD_SIGNING_FAILED',
          `Could not sign the call with your AWS credentials (${describeNetworkError(error)}). Set AWS_PROFILE, run \`aws sso login\` or export keys, then restart \`leasehold dashboard\`.`,
        ),
      );
    }
  }
  let upstream: Response;
  let answerBody: Buffer;
  try {
    upstream = await (options.fetch ?? globalThis.fetch)(url, {
      method,
      headers,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
      ...(text === undefined ? {} : { body: text }),
    });
    answerBody = Buffer.from(await upstream.arrayBuffer());
  } catch (error) {
    return reply(
      res,
      problem(
        502,
        'DASHBOARD_UPSTREAM_UNREACHABLE',
        `Cannot reach the API at ${options.target.href} (${describeNetworkError(error)}). If this was a change, reload to see whether it took effect.`,
      ),
    );
  }
  const passed: Record<string, string> = {};
  for (const name of PASSED_BACK_HEADERS) {
    const value = upstream.headers.get(name);
    if (value !== null) passed[name] = value;
  }
  res.writeHead(upstream.status, {
    ...passed,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(answerBody);
}

/** The whole body, or undefined once it passes the limit (the rest is not read). */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORWARDED_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function reply(res: ServerResponse, response: ApiResponse): void {
  res.writeHead(response.statusCode, {
    ...response.headers,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(response.body);
}
