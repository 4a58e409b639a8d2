/**
 * `leasehold dashboard`'s server: serves the dashboard on 127.0.0.1 and forwards the page's API calls to
 * the deployed API (or the sim's), each signed with SigV4 by the client's own signer, and passes the
 * answer through unchanged (status, content-type, retry-after, location, allow and the body), so the
 * API's problem messages reach the page as they are.
 *
 * This server signs with the user's AWS credentials, so nobody but the browser the user opened it in may
 * use it:
 * - it listens on 127.0.0.1 only;
 * - it answers only the browser that opened the printed one-time link (dashboard-session.ts): an
 *   HttpOnly, SameSite=Strict cookie; another local user or process that connects gets nothing, the
 *   page included;
 * - it refuses a request whose Host is not its own (DNS rebinding), and a state change from another
 *   origin or site or with a form's content type (browser-guard.ts, the local stack's rules); it never
 *   grants a CORS preflight;
 * - it forwards the API's routes only (api-routes.ts), and nothing of the browser's own headers but
 *   accept and content-type.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { problem, type ApiResponse } from '../../shared/api/http.js';
import { OWNER_HEADER } from '../../shared/api/caller.js';
import type { RequestSigner } from '../../shared/client/sigv4.js';
import { describeNetworkError } from '../../shared/client/http-transport.js';
import { isApiRoute } from './api-routes.js';
import { allowedHostsFor, browserRefusal } from '../local/browser-guard.js';
import { isDashboardPath, serveDashboardAsset } from './dashboard-assets.js';
import { DashboardSession, SIGN_IN_PARAMETER } from './dashboard-session.js';

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
  /** The one-time link that signs in the browser that opens it first (print it; never log it elsewhere). */
  signInUrl: string;
  close(): Promise<void>;
}

interface ProxyState {
  session: DashboardSession | undefined;
  allowedHosts: ReadonlySet<string>;
}

export async function startDashboardProxy(options: DashboardProxyOptions): Promise<DashboardProxy> {
  // Filled once listening (port 0 picks one): nothing is answered before.
  const state: ProxyState = { session: undefined, allowedHosts: new Set() };
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
  state.allowedHosts = allowedHostsFor(port);
  state.session = new DashboardSession(port);
  return {
    url: `http://127.0.0.1:${port}/`,
    signInUrl: `http://127.0.0.1:${port}/?${state.session.signInQuery!}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
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
  state: ProxyState,
): Promise<void> {
  const method = req.method ?? 'GET';
  const refusal = browserRefusal(method, req.headers, state.allowedHosts);
  if (refusal) return reply(res, problem(refusal.status, `DASHBOARD_${refusal.code}`, refusal.detail));
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
  const session = state.session!;
  const code = url.searchParams.get(SIGN_IN_PARAMETER);
  if (pathname === '/' && code !== null) return signIn(res, session, code, req.headers.cookie);
  if (!session.admits(req.headers.cookie))
    return reply(
      res,
      problem(
        401,
        'DASHBOARD_SIGN_IN_REQUIRED',
        'Open the sign-in link `leasehold dashboard` printed (it works once, in the browser that opens it first); to sign in another browser, restart `leasehold dashboard`.',
      ),
    );
  if (isDashboardPath(pathname))
    return serveDashboardAsset(req, res, pathname, { apiLabel: options.apiLabel });
  if (!isApiRoute(method, pathname))
    return reply(
      res,
      problem(
        404,
        'DASHBOARD_NOT_FORWARDED',
        `${method} ${pathname} is not a route of the API; the dashboard forwards the API's routes only.`,
      ),
    );
  const body = await readBody(req);
  if (body === undefined)
    return reply(
      res,
      problem(413, 'BODY_TOO_LARGE', `The body is over ${MAX_FORWARDED_BODY_BYTES} bytes; it was not sent.`),
    );
  await forward(res, options, method, pathname + search, body, req.headers);
}

/** The one-time link: its code becomes this browser's session cookie, and the page loads without it in the URL. */
function signIn(
  res: ServerResponse,
  session: DashboardSession,
  code: string,
  cookies: string | undefined,
): void {
  // The link opened again in the browser it signed in: on to the page.
  const cookie = session.admits(cookies) ? undefined : session.redeem(code);
  if (!cookie && !session.admits(cookies))
    return reply(
      res,
      problem(
        403,
        'DASHBOARD_SIGN_IN_SPENT',
        "This sign-in link was used already, or is not this run's: it signs in one browser, once. Restart `leasehold dashboard` for a new link.",
      ),
    );
  res.writeHead(303, {
    location: '/',
    ...(cookie ? { 'set-cookie': cookie } : {}),
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  });
  res.end();
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
