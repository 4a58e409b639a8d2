import { describe, expect, it } from 'vitest';
import { evaluate, trusts, wildcardMatch, type PolicyDocument } from '../tools/sim/iam/policy-evaluator.js';
import { verifySigV4, type Credentials } from '../tools/sim/iam/sigv4-verifier.js';
import { sigv4Signer } from '../shared/client/sigv4.js';

const table = 'arn:aws:dynamodb:us-east-1:123456789012:table/T';
const policy: PolicyDocument = {
  Statement: [
    { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:Query'], Resource: table },
    { Effect: 'Allow', Action: 'dynamodb:Query', Resource: `${table}/index/ready` },
    {
      Effect: 'Allow',
      Action: 'iam:PassRole',
      Resource: 'arn:aws:iam::123456789012:role/R',
      Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
    },
    {
      Effect: 'Allow',
      Action: 'scheduler:*',
      Resource: 'arn:aws:scheduler:us-east-1:123456789012:schedule/G/*',
    },
    { Effect: 'Deny', Action: 'scheduler:DeleteSchedule', Resource: '*' },
  ],
};

describe('IAM policy evaluation (sim)', () => {
  it('allows what a statement names, on the exact resource; an index is a resource of its own', () => {
    expect(evaluate([policy], { action: 'dynamodb:GetItem', resource: table })).toBe('allow');
    expect(evaluate([policy], { action: 'DynamoDB:getitem', resource: table })).toBe('allow'); // actions are case-insensitive
    expect(evaluate([policy], { action: 'dynamodb:PutItem', resource: table })).toBe('implicit-deny');
    expect(evaluate([policy], { action: 'dynamodb:Query', resource: `${table}/index/ready` })).toBe('allow');
    expect(evaluate([policy], { action: 'dynamodb:Query', resource: `${table}/index/owner` })).toBe(
      'implicit-deny',
    );
  });

  it('checks conditions, wildcards, and lets an explicit Deny win', () => {
    expect(
      evaluate([policy], {
        action: 'iam:PassRole',
        resource: 'arn:aws:iam::123456789012:role/R',
        context: { 'iam:PassedToService': 'scheduler.amazonaws.com' },
      }),
    ).toBe('allow');
    expect(
      evaluate([policy], {
        action: 'iam:PassRole',
        resource: 'arn:aws:iam::123456789012:role/R',
        context: { 'iam:PassedToService': 'lambda.amazonaws.com' },
      }),
    ).toBe('implicit-deny');
    expect(evaluate([policy], { action: 'iam:PassRole', resource: 'arn:aws:iam::123456789012:role/R' })).toBe(
      'implicit-deny',
    );
    expect(
      evaluate([policy], {
        action: 'scheduler:CreateSchedule',
        resource: 'arn:aws:scheduler:us-east-1:123456789012:schedule/G/nightly',
      }),
    ).toBe('allow');
    expect(
      evaluate([policy], {
        action: 'scheduler:CreateSchedule',
        resource: 'arn:aws:scheduler:us-east-1:123456789012:schedule/Other/nightly',
      }),
    ).toBe('implicit-deny');
    expect(
      evaluate([policy], {
        action: 'scheduler:DeleteSchedule',
        resource: 'arn:aws:scheduler:us-east-1:123456789012:schedule/G/nightly',
      }),
    ).toBe('explicit-deny');
    expect(wildcardMatch('a?c*', 'abcdef')).toBe(true);
    expect(wildcardMatch('a.c', 'abc')).toBe(false);
  });

  it('a trust policy lets in only the named service, under its conditions', () => {
    const trust: PolicyDocument = {
      Statement: [
        {
          Effect: 'Allow',
          Action: 'sts:AssumeRole',
          Principal: { Service: 'scheduler.amazonaws.com' },
          Condition: { StringEquals: { 'aws:SourceAccount': '123', 'aws:SourceArn': 'arn:g' } },
        },
      ],
    };
    expect(
      trusts(trust, 'scheduler.amazonaws.com', 'sts:AssumeRole', {
        'aws:SourceAccount': '123',
        'aws:SourceArn': 'arn:g',
      }),
    ).toBe(true);
    expect(
      trusts(trust, 'scheduler.amazonaws.com', 'sts:AssumeRole', {
        'aws:SourceAccount': '123',
        'aws:SourceArn': 'arn:other',
      }),
    ).toBe(false);
    expect(
      trusts(trust, 'lambda.amazonaws.com', 'sts:AssumeRole', {
        'aws:SourceAccount': '123',
        'aws:SourceArn': 'arn:g',
      }),
    ).toBe(false);
  });
});

describe('SigV4 verification (sim), against requests signed by the CLI signer', () => {
  const credentials: Credentials = { accessKeyId: 'AKIATEST', secretAccessKey: 'secret' };
  const secretOf = (key: string) => (key === credentials.accessKeyId ? credentials : undefined);
  const signed = async (
    body: string,
    path = '/tasks?limit=5&status=QUEUED',
    creds: Credentials = credentials,
  ) => {
    const url = new URL(`http://127.0.0.1:4000${path}`);
    const headers = await sigv4Signer('us-east-1', creds)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return {
      method: 'POST',
      path: url.pathname,
      query: url.search.slice(1),
      headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
      body: Buffer.from(body),
    };
  };

  it('accepts the signature of the request as sent', async () => {
    expect(await verifySigV4(await signed('{"type":"demo.echo"}'), secretOf, 'execute-api')).toMatchObject({
      ok: true,
      accessKeyId: 'AKIATEST',
      region: 'us-east-1',
    });
  });

  it('refuses a changed body, an unknown key, another service, an unsigned request and an old date', async () => {
    const request = await signed('{"type":"demo.echo"}');
    expect(
      await verifySigV4({ ...request, body: Buffer.from('{"type":"demo.fail"}') }, secretOf, 'execute-api'),
    ).toMatchObject({ ok: false, reason: 'bad-signature' });
    expect(
      await verifySigV4(
        await signed('{}', '/tasks', { accessKeyId: 'AKIAOTHER', secretAccessKey: 'x' }),
        secretOf,
        'execute-api',
      ),
    ).toMatchObject({ ok: false, reason: 'unknown-key' });
    expect(await verifySigV4(request, secretOf, 'dynamodb')).toMatchObject({
      ok: false,
      reason: 'wrong-service',
    });
    expect(await verifySigV4({ ...request, headers: {} }, secretOf, 'execute-api')).toMatchObject({
      ok: false,
      reason: 'unsigned',
    });
    expect(await verifySigV4(request, secretOf, 'execute-api', Date.now() + 16 * 60_000)).toMatchObject({
      ok: false,
      reason: 'expired',
    });
  });

  it('temporary credentials need their session token', async () => {
    const temporary: Credentials = { accessKeyId: 'ASIATEMP', secretAccessKey: 's', sessionToken: 'token-1' };
    const lookup = (key: string) => (key === temporary.accessKeyId ? temporary : undefined);
    expect(await verifySigV4(await signed('{}', '/health', temporary), lookup, 'execute-api')).toMatchObject({
      ok: true,
    });
    expect(
      await verifySigV4(
        await signed('{}', '/health', { ...temporary, sessionToken: 'stolen' }),
        lookup,
        'execute-api',
      ),
    ).toMatchObject({ ok: false, reason: 'unknown-key' });
  });
});
