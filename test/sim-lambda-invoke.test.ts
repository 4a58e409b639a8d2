/**
 * The sim's Lambda Invoke endpoint, called with the real `@aws-sdk/client-lambda`: SigV4 checked, the
 * caller's lambda:InvokeFunction decided by real IAM policies, Event queued, RequestResponse answered,
 * and every refusal raised by the SDK as the exception Lambda's would be.
 */
import {
  InvalidRequestContentException,
  InvokeCommand,
  type LambdaClient,
  RequestTooLargeException,
  ResourceNotFoundException,
  TooManyRequestsException,
  type InvokeCommandInput,
} from '@aws-sdk/client-lambda';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessLog } from '../tools/sim/iam/access-log.js';
import type { SimPrincipal } from '../tools/sim/iam/identity-store.js';
import type { Credentials } from '../tools/sim/iam/sigv4-verifier.js';
import type { InvokeServer } from '../tools/sim/lambda/invoke-server.js';
import type { FunctionDefinition, LambdaService } from '../tools/sim/lambda/lambda-service.js';
import {
  ACCOUNT,
  addUser,
  arnOf,
  functionDefinition,
  identitiesWithRole,
  requireLambdaSdk,
  startInvokeStack,
  uniqueFile,
  writeBundle,
} from './support/sim-lambda-fixtures.js';

const PROBE = arnOf('probe');

// One tiny bundle for every function: it records each event it gets (the proof that it ran), and can
// itself call Invoke through AWS_ENDPOINT_URL_LAMBDA with its role's session credentials.
const root = writeBundle(
  'sim-lambda-invoke-',
  `
const fs = require('node:fs');
exports.handler = async (event, context) => {
  if (event.mark) fs.writeFileSync(event.mark, JSON.stringify({ event, fn: context.functionName }));
  if (event.sleep) await new Promise((r) => setTimeout(r, event.sleep));
  if (event.fail) throw new TypeError('bad input');
  if (event.chain) {
    ${requireLambdaSdk}
    const client = new LambdaClient({ maxAttempts: 1 });
    const out = await client.send(new InvokeCommand({ FunctionName: 'probe', InvocationType: 'Event', Payload: JSON.stringify(event.chain) }));
    return { chained: out.StatusCode };
  }
  return { echo: event, fn: context.functionName, bytes: JSON.stringify(event).length };
};
`,
);

// The function role, as a template defines it: the real IdentityStore gives its sessions credentials.
const identities = identitiesWithRole({
  stackName: 'invoke-test',
  logicalId: 'ProbeRole',
  roleName: 'probe-role',
  invokes: PROBE,
});
const allowed = addUser(identities, 'allowed', 'lambda:InvokeFunction', [
  PROBE,
  arnOf('narrow'),
  arnOf('ghost'),
]);
const denied = addUser(identities, 'denied', 'lambda:GetFunction', '*');

let server: InvokeServer;
let lambda: LambdaService;
let clientFor: (who: Credentials | SimPrincipal) => LambdaClient;
const accessLog = new AccessLog();

const def = (name: string, logicalId: string, reservedConcurrency?: number): FunctionDefinition =>
  functionDefinition({ name, logicalId, taskRoot: root, roleName: 'probe-role' }, { reservedConcurrency });

beforeAll(async () => {
  ({
    server,
    lambda,
    client: clientFor,
  } = await startInvokeStack({
    definitions: [def('probe', 'Probe'), def('narrow', 'Narrow', 1)],
    identities,
    log: accessLog,
  }));
});
afterAll(async () => {
  await lambda?.close();
  await server?.close();
});

const invoke = (who: Credentials | SimPrincipal, input: InvokeCommandInput) =>
  clientFor(who).send(new InvokeCommand(input));
const json = (payload: Uint8Array | undefined) => JSON.parse(Buffer.from(payload ?? []).toString('utf8'));

async function refusal(
  promise: Promise<unknown>,
): Promise<Error & { $metadata: { httpStatusCode?: number } }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error('expected the call to be refused');
  return error as Error & { $metadata: { httpStatusCode?: number } };
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const mark = (name: string) => uniqueFile(root, name, '.json');

describe('Invoke through the sim endpoint', () => {
  it('Event from an allowed caller: 202 with an empty body, and the function runs with that event', async () => {
    const file = mark('event');
    const before = lambda.stats().Probe!.invocations;
    const out = await invoke(allowed, {
      FunctionName: 'probe',
      InvocationType: 'Event',
      Payload: JSON.stringify({ mark: file, n: 1 }),
    });
    expect(out.StatusCode).toBe(202);
    expect(out.Payload?.length ?? 0).toBe(0);
    // The function's writeFileSync creates the file before it writes the record: wait for the record.
    await until(() => existsSync(file) && readFileSync(file, 'utf8').length > 0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ event: { mark: file, n: 1 }, fn: 'probe' });
    expect(lambda.stats().Probe!.invocations).toBeGreaterThan(before);
  });

  it('RequestResponse: 200 with the function answer, $LATEST, and a function error in FunctionError', async () => {
    const out = await invoke(allowed, { FunctionName: 'probe', Payload: JSON.stringify({ hello: 'world' }) });
    expect(out.StatusCode).toBe(200);
    expect(out.ExecutedVersion).toBe('$LATEST');
    expect(out.FunctionError).toBeUndefined();
    expect(json(out.Payload)).toMatchObject({ echo: { hello: 'world' }, fn: 'probe' });

    const failed = await invoke(allowed, { FunctionName: 'probe', Payload: JSON.stringify({ fail: true }) });
    expect(failed.StatusCode).toBe(200);
    expect(failed.FunctionError).toBe('Unhandled');
    expect(json(failed.Payload)).toMatchObject({ errorType: 'TypeError', errorMessage: 'bad input' });

    // No payload at all is the event {} on Lambda.
    const empty = await invoke(allowed, { FunctionName: 'probe' });
    expect(json(empty.Payload)).toMatchObject({ echo: {} });
  });

  it('takes the function as an ARN, a partial ARN or with $LATEST; another qualifier names no function here', async () => {
    for (const input of [
      { FunctionName: PROBE },
      { FunctionName: `${ACCOUNT}:function:probe` },
      { FunctionName: 'probe:$LATEST' },
      { FunctionName: `${PROBE}:$LATEST` },
      { FunctionName: 'probe', Qualifier: '$LATEST' },
    ]) {
      const out = await invoke(allowed, { ...input, Payload: '{"via":"name"}' });
      expect([input, out.StatusCode, json(out.Payload).fn]).toEqual([input, 200, 'probe']);
    }
    const versioned = await refusal(invoke(allowed, { FunctionName: 'probe', Qualifier: '1' }));
    expect(versioned).toBeInstanceOf(ResourceNotFoundException);
    expect(versioned.message).toBe(`Function not found: ${PROBE}:1`);
    const elsewhere = await refusal(
      invoke(allowed, { FunctionName: 'arn:aws:lambda:eu-west-1:123456789012:function:probe' }),
    );
    expect(elsewhere).toBeInstanceOf(ResourceNotFoundException);
  });

  it('a caller without lambda:InvokeFunction gets AccessDeniedException, and nothing runs or is queued', async () => {
    const file = mark('denied');
    const before = lambda.stats().Probe!;
    for (const InvocationType of ['Event', 'RequestResponse', 'DryRun'] as const) {
      const error = await refusal(
        invoke(denied, { FunctionName: 'probe', InvocationType, Payload: JSON.stringify({ mark: file }) }),
      );
      expect([InvocationType, error.name, error.$metadata.httpStatusCode]).toEqual([
        InvocationType,
        'AccessDeniedException',
        403,
      ]);
      expect(error.message).toContain(
        `User: ${denied.arn} is not authorized to perform: lambda:InvokeFunction`,
      );
    }
    const after = lambda.stats().Probe!;
    expect([after.invocations, after.queued]).toEqual([before.invocations, 0]);
    await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(file)).toBe(false);
    expect(
      accessLog.denied().filter((r) => r.principalArn === denied.arn && r.action === 'lambda:InvokeFunction'),
    ).toHaveLength(3);
  });

  it('DryRun checks the permission and answers 204 without running the function', async () => {
    const before = lambda.stats().Probe!.invocations;
    const out = await invoke(allowed, { FunctionName: 'probe', InvocationType: 'DryRun', Payload: '{}' });
    expect(out.StatusCode).toBe(204);
    expect(lambda.stats().Probe!.invocations).toBe(before);
    expect(lambda.stats().Probe!.queued).toBe(0);
  });

  it('refuses a bad signature, an unknown key, a session key without its token and an unsigned request', async () => {
    const wrongSecret = await refusal(
      invoke({ ...allowed.credentials, secretAccessKey: 'not-the-secret' }, { FunctionName: 'probe' }),
    );
    expect([wrongSecret.name, wrongSecret.$metadata.httpStatusCode]).toEqual([
      'InvalidSignatureException',
      403,
    ]);
    const unknown = await refusal(
      invoke({ accessKeyId: 'AKIANOTASIMKEY000000', secretAccessKey: 'x' }, { FunctionName: 'probe' }),
    );
    expect([unknown.name, unknown.$metadata.httpStatusCode]).toEqual(['UnrecognizedClientException', 403]);
    // A session key is valid only with its token.
    const session = identities.assumeRole(`arn:aws:iam::${ACCOUNT}:role/probe-role`, 'probe');
    const tokenless = await refusal(
      invoke(
        {
          accessKeyId: session.credentials.accessKeyId,
          secretAccessKey: session.credentials.secretAccessKey,
        },
        { FunctionName: 'probe' },
      ),
    );
    expect(tokenless.name).toBe('UnrecognizedClientException');
    const unsigned = await fetch(`${server.endpoint}/2015-03-31/functions/probe/invocations`, {
      method: 'POST',
      body: '{}',
    });
    expect([unsigned.status, unsigned.headers.get('x-amzn-errortype')]).toEqual([
      403,
      'MissingAuthenticationTokenException',
    ]);
    expect(lambda.stats().Probe!.queued).toBe(0);
  });

  it('an unknown function is ResourceNotFoundException', async () => {
    const error = await refusal(invoke(allowed, { FunctionName: 'ghost', Payload: '{}' }));
    expect(error).toBeInstanceOf(ResourceNotFoundException);
    expect(error.message).toBe(`Function not found: ${arnOf('ghost')}`);
    const event = await refusal(invoke(allowed, { FunctionName: 'ghost', InvocationType: 'Event' }));
    expect(event).toBeInstanceOf(ResourceNotFoundException);
  });

  it('a body that is not JSON is InvalidRequestContentException; payloads over the quotas are RequestTooLargeException', async () => {
    const notJson = await refusal(invoke(allowed, { FunctionName: 'probe', Payload: 'not json' }));
    expect(notJson).toBeInstanceOf(InvalidRequestContentException);
    expect(notJson.$metadata.httpStatusCode).toBe(400);

    // Just over 1 MB: too large for Event, fine for RequestResponse (6 MB).
    const overAsync = JSON.stringify({ pad: 'x'.repeat(1024 * 1024) });
    const tooLarge = await refusal(
      invoke(allowed, { FunctionName: 'probe', InvocationType: 'Event', Payload: overAsync }),
    );
    expect(tooLarge).toBeInstanceOf(RequestTooLargeException);
    expect(tooLarge.$metadata.httpStatusCode).toBe(413);
    const sync = await invoke(allowed, { FunctionName: 'probe', Payload: overAsync });
    expect(json(sync.Payload).bytes).toBe(overAsync.length);

    const overSync = JSON.stringify({ pad: 'x'.repeat(6 * 1024 * 1024) });
    expect(await refusal(invoke(allowed, { FunctionName: 'probe', Payload: overSync }))).toBeInstanceOf(
      RequestTooLargeException,
    );
    expect(lambda.stats().Probe!.queued).toBe(0);
  });

  it('beyond the reserved concurrency RequestResponse is TooManyRequestsException while Event is accepted and queued', async () => {
    // Warm the only environment the reservation allows, then keep it busy.
    await invoke(allowed, { FunctionName: 'narrow', Payload: '{}' });
    // It takes the next event once its runtime asks for one (later on a loaded machine, or with its CPU share).
    await until(() => lambda.stats().Narrow!.environments.some((e) => e.state === 'idle'));
    const busy = invoke(allowed, { FunctionName: 'narrow', Payload: JSON.stringify({ sleep: 500 }) });
    await until(() => lambda.stats().Narrow!.environments.some((e) => e.state === 'busy'));

    const throttled = await refusal(invoke(allowed, { FunctionName: 'narrow', Payload: '{}' }));
    expect(throttled).toBeInstanceOf(TooManyRequestsException);
    expect(throttled.$metadata.httpStatusCode).toBe(429);
    expect((throttled as TooManyRequestsException).Reason).toBe(
      'ReservedFunctionConcurrentInvocationLimitExceeded',
    );
    expect(throttled.message).toBe('Rate Exceeded.');

    const file = mark('queued');
    const queued = await invoke(allowed, {
      FunctionName: 'narrow',
      InvocationType: 'Event',
      Payload: JSON.stringify({ mark: file }),
    });
    expect(queued.StatusCode).toBe(202);
    expect(lambda.stats().Narrow!.queued).toBe(1);
    expect((await busy).StatusCode).toBe(200);
  });

  it('a function invokes another with its role session through AWS_ENDPOINT_URL_LAMBDA', async () => {
    const file = mark('chained');
    const out = await invoke(allowed, {
      FunctionName: 'probe',
      Payload: JSON.stringify({ chain: { mark: file } }),
    });
    expect(json(out.Payload)).toEqual({ chained: 202 });
    await until(() => existsSync(file));
    const session = `arn:aws:sts::${ACCOUNT}:assumed-role/probe-role/probe`;
    expect(
      accessLog
        .all()
        .some((r) => r.principalArn === session && r.action === 'lambda:InvokeFunction' && r.allowed),
    ).toBe(true);
  });
});
