/**
 * The HTTP API as API Gateway serves it: route selection first (no route: its own 404), then IAM
 * authorization for AWS_IAM routes (a SigV4 signature of service execute-api from a known principal,
 * whose policies allow execute-api:Invoke on the route's ARN; else its own 403), stage throttling
 * (429), the 10 MB request limit (413), then the Lambda proxy integration with the 30 s integration
 * timeout (503) and the function's errors and malformed or oversized answers (500). These answers are
 * API Gateway's `{"message": ...}`, never the function's.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../loopback-server.js';
import type { AccessLog } from '../iam/access-log.js';
import type { IdentityStore } from '../iam/identity-store.js';
import { verifySigV4 } from '../iam/sigv4-verifier.js';
import { LambdaError, type LambdaService } from '../lambda/lambda-service.js';
import { buildProxyEvent, mapProxyResult } from './proxy-event.js';
import { selectRoute, type Route } from './route-table.js';

/** API Gateway quotas for HTTP APIs. */
export const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
export const MAX_INTEGRATION_TIMEOUT_MS = 30_000;

export interface GatewayOptions {
  apiId: string;
  stage: string;
  region: string;
  accountId: string;
  routes: Route[];
  throttle: { rateLimit: number; burstLimit: number } | undefined;
  identities: IdentityStore;
  lambda: LambdaService;
  log: AccessLog;
  port?: number;
  /** API Gateway's access log (the stage's AccessLogSettings). */
  accessLog: (entry: Record<string, unknown>) => void;
}

class TokenBucket {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }
  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

const requestId = () =>
  randomBytes(10)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '')
    .slice(0, 14) + '=';

export async function startGateway(
  options: GatewayOptions,
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const bucket = options.throttle
    ? new TokenBucket(options.throttle.rateLimit, options.throttle.burstLimit)
    : undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const started = Date.now();
    const id = requestId();
    const [rawPath, rawQueryString = ''] = (req.url ?? '/').split('?') as [string, string?];
    const method = req.method ?? 'GET';
    let caller = '-';
    let routeKey = '-';
    const answer = (
      status: number,
      body: Buffer | string,
      headers: Record<string, string | string[]> = { 'content-type': 'application/json' },
      integrationError?: string,
    ) => {
      res.writeHead(status, { ...headers, 'apigw-requestid': id });
      res.end(body);
      options.accessLog({
        requestId: id,
        ip: req.socket.remoteAddress,
        caller,
        method,
        route: routeKey,
        status,
        latencyMs: Date.now() - started,
        ...(integrationError ? { integrationError } : {}),
      });
    };
    const own = (status: number, message: string, integrationError?: string) =>
      answer(status, JSON.stringify({ message }), { 'content-type': 'application/json' }, integrationError);

    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > MAX_REQUEST_BYTES) return own(413, 'Request Entity Too Large');
      chunks.push(c as Buffer);
    }
    const body = Buffer.concat(chunks);
    const match = selectRoute(options.routes, method, decodeURIComponent(rawPath));
    if (!match) return own(404, 'Not Found');
    const { route } = match;
    routeKey = route.routeKey;

    let iam:
      { accessKey: string; accountId: string; callerId: string; userArn: string; userId: string } | undefined;
    if (route.authorization === 'AWS_IAM') {
      const verified = await verifySigV4(
        { method, path: rawPath, query: rawQueryString, headers: req.headers, body },
        (key) => options.identities.byAccessKey(key)?.credentials,
        'execute-api',
      );
      if (!verified.ok) return own(403, verified.reason === 'unsigned' ? 'Forbidden' : verified.message);
      const principal = options.identities.byAccessKey(verified.accessKeyId)!;
      caller = principal.arn;
      const resource = `arn:aws:execute-api:${options.region}:${options.accountId}:${options.apiId}/${options.stage}/${method}${rawPath}`;
      const allowed = options.identities.isAllowed(principal.arn, 'execute-api:Invoke', resource);
      options.log.add({
        at: Date.now(),
        service: 'execute-api',
        principalArn: principal.arn,
        action: 'execute-api:Invoke',
        resource,
        allowed,
      });
      if (!allowed) return own(403, 'Forbidden');
      iam = {
        accessKey: verified.accessKeyId,
        accountId: principal.accountId,
        callerId: principal.userId,
        userArn: principal.arn,
        userId: principal.userId,
      };
    }
    if (bucket && !bucket.take()) return own(429, 'Too Many Requests');

    const event = buildProxyEvent(
      {
        method,
        rawPath,
        rawQueryString,
        headers: req.headers,
        body,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
      },
      {
        accountId: options.accountId,
        apiId: options.apiId,
        region: options.region,
        routeKey: route.routeKey,
        stage: options.stage,
        requestId: id,
        now: started,
        pathParameters: match.pathParameters,
        ...(iam ? { iam } : {}),
      },
    );
    // API Gateway names the route (its path template, e.g. /tasks/{id}), not the request path, when it invokes.
    const sourceArn = `arn:aws:execute-api:${options.region}:${options.accountId}:${options.apiId}/${options.stage}/${route.routeKey === '$default' ? '$default' : `${method}${route.path}`}`;
    const timeoutMs = Math.min(route.integration.timeoutMs, MAX_INTEGRATION_TIMEOUT_MS);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>(
      (resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)),
    );
    try {
      const result = await Promise.race([
        options.lambda.invoke(route.integration.functionArn, JSON.stringify(event), {
          service: 'apigateway.amazonaws.com',
          sourceArn,
        }),
        timedOut,
      ]);
      if (result === 'timeout')
        return own(503, 'Service Unavailable', `integration timed out after ${timeoutMs} ms`);
      if (result.functionError)
        return own(500, 'Internal Server Error', `the function failed: ${result.errorType}`);
      const mapped = mapProxyResult(result.payload);
      if (!mapped) return own(500, 'Internal Server Error', 'malformed Lambda proxy response');
      return answer(mapped.status, mapped.body, mapped.headers);
    } catch (error) {
      if (error instanceof LambdaError)
        return own(500, 'Internal Server Error', `${error.code}: ${error.message}`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ message: 'Internal Server Error' }));
      options.accessLog({ error: String(error) });
    });
  });
  const { port, close } = await listenOnLoopback(server, options.port);
  return { url: `http://127.0.0.1:${port}/`, server, close };
}
