import { describe, expect, it } from 'vitest';
import { buildProxyEvent, mapProxyResult } from '../tools/sim/http-api/proxy-event.js';
import { selectRoute, type Route } from '../tools/sim/http-api/route-table.js';

const integration = {
  functionArn: 'arn:aws:lambda:us-east-1:1:function:f',
  payloadFormatVersion: '2.0',
  timeoutMs: 30_000,
};
const route = (routeKey: string): Route => {
  const [method, path] = routeKey === '$default' ? ['ANY', '/'] : (routeKey.split(' ') as [string, string]);
  return { routeKey, method, path, authorization: 'AWS_IAM', integration };
};

describe('HTTP API route selection (sim)', () => {
  const routes = [
    'GET /tasks',
    'POST /tasks',
    'GET /tasks/{id}',
    'POST /tasks/{id}/cancel',
    'GET /files/{proxy+}',
    'ANY /things/{id}',
  ].map(route);

  it('picks the exact route, fills path parameters, and finds nothing for an unknown path or method', () => {
    expect(selectRoute(routes, 'GET', '/tasks')?.route.routeKey).toBe('GET /tasks');
    expect(selectRoute(routes, 'GET', '/tasks/abc')).toMatchObject({
      route: { routeKey: 'GET /tasks/{id}' },
      pathParameters: { id: 'abc' },
    });
    expect(selectRoute(routes, 'POST', '/tasks/a%20b/cancel')?.pathParameters).toEqual({ id: 'a b' });
    expect(selectRoute(routes, 'GET', '/files/a/b/c')?.pathParameters).toEqual({ proxy: 'a/b/c' });
    expect(selectRoute(routes, 'DELETE', '/things/1')?.route.routeKey).toBe('ANY /things/{id}');
    expect(selectRoute(routes, 'DELETE', '/tasks')).toBeUndefined();
    expect(selectRoute(routes, 'GET', '/nope')).toBeUndefined();
  });

  it('prefers literal segments over variables, and falls back to $default last', () => {
    const withDefault = [route('GET /tasks/{id}'), route('GET /tasks/stats'), route('$default')];
    expect(selectRoute(withDefault, 'GET', '/tasks/stats')?.route.routeKey).toBe('GET /tasks/stats');
    expect(selectRoute(withDefault, 'GET', '/tasks/x')?.route.routeKey).toBe('GET /tasks/{id}');
    expect(selectRoute(withDefault, 'PUT', '/anything')?.route.routeKey).toBe('$default');
  });
});

describe('payload format 2.0 (sim)', () => {
  const iam = {
    accessKey: 'AKIA1',
    accountId: '123456789012',
    callerId: 'AIDA1',
    userArn: 'arn:aws:iam::123456789012:user/u',
    userId: 'AIDA1',
  };
  const ctx = {
    accountId: '123456789012',
    apiId: 'abc123',
    region: 'us-east-1',
    routeKey: 'GET /tasks/{id}',
    stage: '$default',
    requestId: 'r1',
    now: Date.UTC(2026, 11, 1, 9, 3, 58),
    pathParameters: { id: 't1' },
    iam,
  };

  it('builds the event as API Gateway does for an IAM route', () => {
    const event = buildProxyEvent(
      {
        method: 'GET',
        rawPath: '/tasks/t1',
        rawQueryString: 'a=1&a=2&b=x',
        headers: { 'X-Thing': 'v', cookie: 'c1=1; c2=2', accept: ['a', 'b'] },
        body: Buffer.alloc(0),
        sourceIp: '127.0.0.1',
      },
      ctx,
    );
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'GET /tasks/{id}',
      rawPath: '/tasks/t1',
      rawQueryString: 'a=1&a=2&b=x',
      cookies: ['c1=1', 'c2=2'],
      headers: { 'x-thing': 'v', accept: 'a,b' },
      queryStringParameters: { a: '1,2', b: 'x' },
      pathParameters: { id: 't1' },
      isBase64Encoded: false,
      requestContext: {
        accountId: '123456789012',
        apiId: 'abc123',
        domainName: 'abc123.execute-api.us-east-1.amazonaws.com',
        stage: '$default',
        time: '01/Dec/2026:09:03:58 +0000',
        timeEpoch: ctx.now,
        authorizer: { iam: { userArn: iam.userArn, accessKey: 'AKIA1', cognitoIdentity: null } },
        http: { method: 'GET', path: '/tasks/t1', protocol: 'HTTP/1.1' },
      },
    });
    expect(event.body).toBeUndefined();
    expect(event.headers.cookie).toBeUndefined();
  });

  it('passes JSON bodies as text and other bodies base64-encoded', () => {
    const json = buildProxyEvent(
      {
        method: 'POST',
        rawPath: '/tasks',
        rawQueryString: '',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from('{"a":1}'),
        sourceIp: '::1',
      },
      ctx,
    );
    expect(json).toMatchObject({ body: '{"a":1}', isBase64Encoded: false });
    const binary = buildProxyEvent(
      {
        method: 'POST',
        rawPath: '/tasks',
        rawQueryString: '',
        headers: {},
        body: Buffer.from('{"a":1}'),
        sourceIp: '::1',
      },
      ctx,
    );
    expect(binary).toMatchObject({ body: Buffer.from('{"a":1}').toString('base64'), isBase64Encoded: true });
  });

  it('maps explicit and inferred answers, and calls a malformed one malformed', () => {
    expect(
      mapProxyResult(
        JSON.stringify({ statusCode: 201, headers: { Location: '/tasks/1' }, body: '{"ok":true}' }),
      ),
    ).toMatchObject({ status: 201, headers: { location: '/tasks/1' } });
    expect(mapProxyResult(JSON.stringify({ hello: 'world' }))).toMatchObject({
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
    expect(
      mapProxyResult(
        JSON.stringify({
          statusCode: 200,
          body: Buffer.from('hi').toString('base64'),
          isBase64Encoded: true,
        }),
      )!.body.toString(),
    ).toBe('hi');
    expect(mapProxyResult('not json')).toBeUndefined();
    expect(mapProxyResult(JSON.stringify({ statusCode: 'two hundred' }))).toBeUndefined();
  });
});
