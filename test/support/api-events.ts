/** Real-shaped API Gateway HTTP API (payload 2.0) events with an IAM authorizer context. */
import type { APIGatewayProxyEventV2WithIAMAuthorizer } from 'aws-lambda';

export interface EventSpec {
  method: string;
  path: string;
  body?: unknown;
  rawBody?: string;
  base64?: boolean;
  contentType?: string | null;
  query?: Record<string, string>;
  /** IAM user ARN of the caller; null for an unsigned request. */
  caller?: string | null;
  stage?: string;
}

export const ALICE = 'arn:aws:iam::123456789012:user/alice';
export const BOB = 'arn:aws:iam::123456789012:user/bob';

export function apiEvent(spec: EventSpec): APIGatewayProxyEventV2WithIAMAuthorizer {
  const body = spec.rawBody ?? (spec.body === undefined ? undefined : JSON.stringify(spec.body));
  const contentType =
    spec.contentType === undefined ? (body === undefined ? undefined : 'application/json') : spec.contentType;
  const stage = spec.stage ?? '$default';
  const caller = spec.caller === undefined ? ALICE : spec.caller;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: spec.path,
    rawQueryString: new URLSearchParams(spec.query ?? {}).toString(),
    headers: {
      host: 'abc123.execute-api.eu-west-1.amazonaws.com',
      ...(contentType ? { 'content-type': contentType } : {}),
    },
    ...(spec.query ? { queryStringParameters: spec.query } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
      domainPrefix: 'abc123',
      http: {
        method: spec.method,
        path: spec.path,
        protocol: 'HTTP/1.1',
        sourceIp: '203.0.113.9',
        userAgent: 'test',
      },
      requestId: `req-${Math.random().toString(36).slice(2)}`,
      routeKey: '$default',
      stage,
      time: '30/Nov/2026:09:00:00 +0000',
      timeEpoch: 1_796_029_200_000,
      authorizer: caller
        ? {
            iam: {
              accessKey: 'AKIAEXAMPLE',
              accountId: '123456789012',
              callerId: 'AIDAEXAMPLE',
              cognitoIdentity: null as never,
              principalOrgId: null as never,
              userArn: caller,
              userId: 'AIDAEXAMPLE',
            },
          }
        : (undefined as never),
    },
    ...(body === undefined ? {} : { body: spec.base64 ? Buffer.from(body).toString('base64') : body }),
    isBase64Encoded: spec.base64 ?? false,
  };
}
