/**
 * The Lambda proxy integration's payload format 2.0, built as API Gateway builds it for an
 * IAM-authorized route, and the function's answer mapped back to an HTTP response (the explicit
 * format with statusCode, or the inferred one). Pure.
 */
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from 'aws-lambda';

export interface IncomingHttp {
  method: string;
  rawPath: string;
  rawQueryString: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  sourceIp: string;
}

export interface EventContext {
  accountId: string;
  apiId: string;
  region: string;
  routeKey: string;
  stage: string;
  requestId: string;
  now: number;
  pathParameters: Record<string, string>;
  iam?: { accessKey: string; accountId: string; callerId: string; userArn: string; userId: string };
}

/** Bodies of these types reach the function as text; anything else (or no type) is base64-encoded. */
const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript)|[^;]*\+json)/i;

function apiGatewayTime(ms: number): string {
  const d = new Date(ms);
  const month = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(d.getUTCDate())}/${month}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}

export function buildProxyEvent(
  http: IncomingHttp,
  ctx: EventContext,
): APIGatewayProxyEventV2WithIAMAuthorizer {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(http.headers))
    if (v !== undefined && k !== 'cookie') headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  const cookies = [http.headers.cookie]
    .flat()
    .filter((c): c is string => typeof c === 'string')
    .flatMap((c) =>
      c
        .split(';')
        .map((x) => x.trim())
        .filter(Boolean),
    );
  const query: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(http.rawQueryString))
    query[k] = k in query ? `${query[k]},${v}` : v;
  const contentType = headers['content-type'] ?? '';
  const hasBody = http.body.length > 0;
  const asText = TEXT_TYPES.test(contentType);
  const domainName = `${ctx.apiId}.execute-api.${ctx.region}.amazonaws.com`;
  const event = {
    version: '2.0',
    routeKey: ctx.routeKey,
    rawPath: http.rawPath,
    rawQueryString: http.rawQueryString,
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: ctx.accountId,
      apiId: ctx.apiId,
      ...(ctx.iam
        ? {
            authorizer: {
              iam: {
                accessKey: ctx.iam.accessKey,
                accountId: ctx.iam.accountId,
                callerId: ctx.iam.callerId,
                cognitoIdentity: null,
                principalOrgId: null,
                userArn: ctx.iam.userArn,
                userId: ctx.iam.userId,
              },
            },
          }
        : {}),
      domainName,
      domainPrefix: ctx.apiId,
      http: {
        method: http.method,
        path: http.rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: http.sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: ctx.requestId,
      routeKey: ctx.routeKey,
      stage: ctx.stage,
      time: apiGatewayTime(ctx.now),
      timeEpoch: ctx.now,
    },
    ...(Object.keys(ctx.pathParameters).length > 0 ? { pathParameters: ctx.pathParameters } : {}),
    ...(hasBody ? { body: asText ? http.body.toString('utf8') : http.body.toString('base64') } : {}),
    isBase64Encoded: hasBody && !asText,
  };
  return event as unknown as APIGatewayProxyEventV2WithIAMAuthorizer;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

/** The function's result as API Gateway returns it (format 2.0); undefined when the result is malformed. */
export function mapProxyResult(payload: string): HttpAnswer | undefined {
  let result: unknown;
  try {
    result = JSON.parse(payload);
  } catch {
    return undefined;
  }
  const looksExplicit = typeof result === 'object' && result !== null && 'statusCode' in result;
  if (!looksExplicit) {
    // The inferred format: any JSON value becomes a 200 with that JSON as the body.
    const body = typeof result === 'string' ? result : JSON.stringify(result);
    return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(body) };
  }
  const r = result as {
    statusCode: unknown;
    headers?: Record<string, unknown>;
    body?: unknown;
    isBase64Encoded?: boolean;
    cookies?: string[];
  };
  if (typeof r.statusCode !== 'number') return undefined;
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(r.headers ?? {})) headers[k.toLowerCase()] = String(v);
  if (r.cookies?.length) headers['set-cookie'] = r.cookies;
  const text = r.body === undefined || r.body === null ? '' : String(r.body);
  return {
    status: r.statusCode,
    headers,
    body: r.isBase64Encoded ? Buffer.from(text, 'base64') : Buffer.from(text),
  };
}
