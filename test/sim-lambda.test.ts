/** The sim's Lambda: execution environments frozen between invocations, killed at their timeout, concurrency and async retries. */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AccessLog } from '../tools/sim/iam/access-log.js';
import type { IdentityStore } from '../tools/sim/iam/identity-store.js';
import { LambdaService, type FunctionDefinition } from '../tools/sim/lambda/lambda-service.js';
import type { ExecutionEnvironment } from '../tools/sim/lambda/execution-environment.js';
import { startGateway } from '../tools/sim/http-api/gateway.js';
import { environmentStarter, invokeSettled, writeBundle } from './support/sim-lambda-fixtures.js';

const root = writeBundle(
  'sim-lambda-',
  `
let armedAt;
const fired = [];
exports.handler = async (received, context) => {
  // Through the HTTP API the request body is in the proxy event.
  const event = received.version === '2.0' ? JSON.parse(received.body || '{}') : received;
  if (event.arm) { armedAt = Date.now(); setTimeout(() => fired.push(Date.now()), event.arm); }
  if (event.sleep) await new Promise((r) => setTimeout(r, event.sleep));
  if (event.crash) setImmediate(() => { throw new Error('boom'); });
  if (event.crash) await new Promise((r) => setTimeout(r, 1000));
  if (event.fail) throw new TypeError('bad input');
  if (event.big) return 'x'.repeat(event.big);
  return { fired: fired.splice(0), armedAt, remaining: context.getRemainingTimeInMillis(), pid: process.pid, fn: context.functionName, heap: process.execArgv.join(' ') };
};
`,
);

const start = environmentStarter(root);
const environment = (timeoutMs = 5_000, log: string[] = []) =>
  start({ name: 'probe', timeoutMs, memoryMb: 256 }, log);
const run = async (e: ExecutionEnvironment, event: unknown) => {
  const r = await invokeSettled(e, event);
  return { ...r, body: JSON.parse(r.payload) };
};

describe('an execution environment', () => {
  it('is frozen between invocations: a timer armed in one fires only inside a later one', async () => {
    const e = await environment();
    // Armed for 600 ms: the child answers and asks for its next event (two exchanges with the parent,
    // which freezes it only then) well within that, also on a loaded machine.
    const first = await run(e, { arm: 600 });
    expect(first.coldStart).toBe(true);
    expect(first.body.heap).toContain('--max-old-space-size=231');
    await new Promise((r) => setTimeout(r, 2_000)); // frozen: the timer cannot fire now
    const second = await run(e, { sleep: 50 });
    expect(second.coldStart).toBe(false);
    expect(second.body.pid).toBe(first.body.pid);
    expect(second.body.fired).toHaveLength(1);
    // It fired after the thaw, not 600 ms after it was armed.
    expect(second.body.fired[0] - second.body.armedAt).toBeGreaterThan(1_900);
  });

  it('counts getRemainingTimeInMillis down from the timeout, and is killed at the timeout', async () => {
    const log: string[] = [];
    const e = await environment(1_500, log);
    const ok = await run(e, {});
    // Counted from this function's 1.5 s (the default would be 3 s), less the thaw and the hand-over.
    expect(ok.body.remaining).toBeGreaterThan(1_000);
    expect(ok.body.remaining).toBeLessThanOrEqual(1_500);
    const late = await e.invoke(JSON.stringify({ sleep: 5_000 }));
    expect(late).toMatchObject({ functionError: 'Unhandled', errorType: 'Sandbox.Timedout' });
    expect(JSON.parse(late.payload).errorMessage).toMatch(/Task timed out after 1\.50 seconds/);
    expect(e.state).toBe('dead');
    expect(log.some((l) => l.includes('Task timed out after 1.50 seconds'))).toBe(true);
  });

  it('killed mid-invocation (the sim shuts down): the invocation ends as a runtime exit, and no timer is left', async () => {
    const e = await environment(60_000);
    const running = e.invoke(JSON.stringify({ sleep: 30_000 }));
    await new Promise((r) => setTimeout(r, 200));
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    e.kill();
    const ended = await running;
    expect(ended).toMatchObject({ functionError: 'Unhandled', errorType: 'Runtime.ExitError' });
    expect(e.state).toBe('dead');
    // The invocation's 60 s timeout timer went with it (it kept a closed sim's process alive).
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBeLessThan(timersBefore);
  });

  it('refuses a response over 6 MB as Lambda does', async () => {
    const e = await environment();
    const big = await run(e, { big: 7 * 1024 * 1024 });
    expect(big).toMatchObject({ functionError: 'Unhandled', errorType: 'Function.ResponseSizeTooLarge' });
    expect(big.body.errorMessage).toMatch(
      /Response payload size exceeded maximum allowed payload size \(6291556 bytes\)/,
    );
  });

  it('reports a handler error, and a crash as an exit of the runtime', async () => {
    const e = await environment();
    const failed = await run(e, { fail: true });
    expect(failed).toMatchObject({ functionError: 'Unhandled', errorType: 'TypeError' });
    const crashed = await e.invoke(JSON.stringify({ crash: true }));
    expect(crashed.functionError).toBe('Unhandled');
    expect(['Error', 'Runtime.ExitError']).toContain(crashed.errorType);
    // The runtime exits once the parent has answered its error report: wait for that, not a fixed time.
    await vi.waitFor(() => expect(e.state).toBe('dead'), { timeout: 5_000, interval: 20 });
  });
});

describe('the Lambda service', () => {
  const def = (overrides: Partial<FunctionDefinition>): FunctionDefinition => ({
    logicalId: 'Probe',
    name: 'probe',
    arn: 'arn:aws:lambda:us-east-1:123456789012:function:probe',
    handler: 'index.handler',
    runtime: 'nodejs22.x',
    taskRoot: root,
    timeoutMs: 5_000,
    memoryMb: 256,
    reservedConcurrency: undefined,
    roleArn: 'arn:aws:iam::123456789012:role/probe',
    nodePath: process.execPath,
    environment: { PATH: process.env.PATH ?? '' },
    asyncConfig: { maximumRetryAttempts: 0, maximumEventAgeMs: 60_000 },
    resourcePolicy: [
      {
        principal: 'apigateway.amazonaws.com',
        action: 'lambda:InvokeFunction',
        sourceArn: 'arn:aws:execute-api:us-east-1:123456789012:api/*/*/health',
      },
    ],
    log: () => undefined,
    ...overrides,
  });
  // Only what the service asks of the IAM store.
  const identities = {
    isAllowed: (principal: string) => principal.endsWith('user/allowed'),
    assumeRole: () => ({
      arn: 'arn:aws:sts::123456789012:assumed-role/probe/probe',
      credentials: { accessKeyId: 'ASIA1', secretAccessKey: 's', sessionToken: 't' },
    }),
  } as unknown as IdentityStore;
  const services: LambdaService[] = [];
  afterAll(() => Promise.all(services.map((s) => s.close())));
  const service = (
    d: FunctionDefinition,
    destinations: (dest: string, fn: string, record: string) => Promise<void> = async () => undefined,
  ) => {
    const s = new LambdaService({
      functions: [d],
      identities,
      log: new AccessLog(),
      accountConcurrency: 1000,
      idleEnvironmentTtlMs: 60_000,
      destinations,
    });
    services.push(s);
    return s;
  };

  it('throttles invocations beyond the reserved concurrency', async () => {
    const s = service(def({ reservedConcurrency: 1 }));
    const caller = { principalArn: 'arn:aws:iam::123456789012:user/allowed' };
    const results = await Promise.allSettled([
      s.invoke('probe', JSON.stringify({ sleep: 400 }), caller),
      s.invoke('probe', JSON.stringify({ sleep: 400 }), caller),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({
      code: 'TooManyRequestsException',
      status: 429,
    });
    expect(s.stats().Probe!.throttles).toBe(1);
  });

  it('checks the caller: an identity policy, or the function resource policy for API Gateway with its source ARN', async () => {
    const s = service(def({}));
    await expect(
      s.invoke('probe', '{}', { principalArn: 'arn:aws:iam::123456789012:user/other' }),
    ).rejects.toMatchObject({ code: 'AccessDeniedException' });
    await expect(
      s.invoke('probe', '{}', {
        service: 'apigateway.amazonaws.com',
        sourceArn: 'arn:aws:execute-api:us-east-1:123456789012:api/$default/GET/health',
      }),
    ).resolves.toMatchObject({ requestId: expect.any(String) });
    await expect(
      s.invoke('probe', '{}', {
        service: 'apigateway.amazonaws.com',
        sourceArn: 'arn:aws:execute-api:us-east-1:123456789012:api/$default/GET/tasks',
      }),
    ).rejects.toMatchObject({ code: 'AccessDeniedException' });
  });

  it('behind the HTTP API: a slow integration is API Gateway 503, a failing function 500, a good one its own answer', async () => {
    const s = service(def({}));
    const route = (routeKey: string, timeoutMs: number) => ({
      routeKey,
      method: routeKey.split(' ')[0]!,
      path: routeKey.split(' ')[1]!,
      authorization: 'NONE',
      integration: { functionArn: def({}).arn, payloadFormatVersion: '2.0', timeoutMs },
    });
    const gateway = await startGateway({
      apiId: 'api',
      stage: '$default',
      region: 'us-east-1',
      accountId: '123456789012',
      // Only the slow route has a short integration timeout: a cold start under load must not look slow.
      routes: [route('POST /slow/health', 300), route('POST /health', 10_000)],
      throttle: undefined,
      identities,
      lambda: s,
      log: new AccessLog(),
      accessLog: () => undefined,
    });
    try {
      const post = (body: unknown, path = 'health') =>
        fetch(new URL(path, gateway.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const slow = await post({ sleep: 1_000 }, 'slow/health');
      expect([slow.status, await slow.json()]).toEqual([503, { message: 'Service Unavailable' }]);
      const failing = await post({ fail: true });
      expect([failing.status, await failing.json()]).toEqual([500, { message: 'Internal Server Error' }]);
      const ok = await post({});
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { fn: string }).fn).toBe('probe');
    } finally {
      await gateway.close();
    }
  });

  it('an asynchronous invocation that fails with no retries left goes to the on-failure destination with Lambda record', async () => {
    const records: { dest: string; record: any }[] = [];
    const s = service(
      def({
        asyncConfig: {
          maximumRetryAttempts: 0,
          maximumEventAgeMs: 60_000,
          onFailure: 'arn:aws:sqs:us-east-1:123456789012:dlq',
        },
      }),
      async (dest, _fn, record) => void records.push({ dest, record: JSON.parse(record) }),
    );
    s.invokeAsync('probe', JSON.stringify({ fail: true }), {
      principalArn: 'arn:aws:iam::123456789012:user/allowed',
    });
    for (let i = 0; i < 100 && records.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      dest: 'arn:aws:sqs:us-east-1:123456789012:dlq',
      record: {
        version: '1.0',
        requestContext: { condition: 'RetriesExhausted', approximateInvokeCount: 1 },
        requestPayload: { fail: true },
        responseContext: { functionError: 'Unhandled' },
        responsePayload: { errorType: 'TypeError' },
      },
    });
  });
});
