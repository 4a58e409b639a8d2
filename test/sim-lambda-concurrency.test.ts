/**
 * The sim's Lambda beyond its concurrency, as Lambda behaves: RequestResponse is refused with 429 and
 * the reason; an event (what Scheduler's deliveries are: Invoke accepts them whatever the concurrency)
 * waits in the function's queue, retried with backoff, and is given up once older than its
 * MaximumEventAgeInSeconds, to the on-failure destination; API Gateway answers a throttled Lambda
 * integration with its own 500.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startGateway } from '../tools/sim/http-api/gateway.js';
import { AccessLog } from '../tools/sim/iam/access-log.js';
import type { IdentityStore } from '../tools/sim/iam/identity-store.js';
import { LambdaService, type FunctionDefinition } from '../tools/sim/lambda/lambda-service.js';

const root = mkdtempSync(join(tmpdir(), 'sim-lambda-concurrency-'));
writeFileSync(
  join(root, 'index.js'),
  `
const fs = require('node:fs');
exports.handler = async (received) => {
  const event = received.version === '2.0' ? JSON.parse(received.body || '{}') : received;
  if (event.sleep) await new Promise((r) => setTimeout(r, event.sleep));
  if (event.mark) fs.writeFileSync(event.mark, String(Date.now()));
  return { statusCode: 200, body: 'ok' };
};
`,
);

const ACCOUNT = '123456789012';
const ARN = `arn:aws:lambda:us-east-1:${ACCOUNT}:function:narrow`;
const DLQ = `arn:aws:sqs:us-east-1:${ACCOUNT}:failures`;
const def = (overrides: Partial<FunctionDefinition> = {}): FunctionDefinition => ({
  logicalId: 'Narrow',
  name: 'narrow',
  arn: ARN,
  handler: 'index.handler',
  runtime: 'nodejs22.x',
  taskRoot: root,
  timeoutMs: 10_000,
  memoryMb: 512,
  reservedConcurrency: 1,
  roleArn: `arn:aws:iam::${ACCOUNT}:role/narrow`,
  nodePath: process.execPath,
  environment: { PATH: process.env.PATH ?? '' },
  asyncConfig: { maximumRetryAttempts: 0, maximumEventAgeMs: 60_000, onFailure: DLQ },
  resourcePolicy: [{ principal: 'apigateway.amazonaws.com', action: 'lambda:InvokeFunction' }],
  log: () => undefined,
  ...overrides,
});
const identities = {
  isAllowed: () => true,
  assumeRole: () => ({
    arn: `arn:aws:sts::${ACCOUNT}:assumed-role/narrow/narrow`,
    credentials: { accessKeyId: 'ASIA1', secretAccessKey: 's', sessionToken: 't' },
  }),
} as unknown as IdentityStore;
const caller = { principalArn: `arn:aws:iam::${ACCOUNT}:user/caller` };

const services: LambdaService[] = [];
afterAll(() => Promise.all(services.map((s) => s.close())));
function service(
  d: FunctionDefinition,
  records: { condition: string; count: number; at: number }[] = [],
  accountConcurrency = 1000,
): LambdaService {
  const s = new LambdaService({
    functions: [d],
    identities,
    log: new AccessLog(),
    accountConcurrency,
    idleEnvironmentTtlMs: 60_000,
    cpuLimit: false,
    destinations: async (_dest, _fn, record) => {
      const r = JSON.parse(record) as {
        requestContext: { condition: string; approximateInvokeCount: number };
      };
      records.push({
        condition: r.requestContext.condition,
        count: r.requestContext.approximateInvokeCount,
        at: Date.now(),
      });
    },
  });
  services.push(s);
  return s;
}
const mark = () => join(root, `mark-${Math.random().toString(36).slice(2)}`);

/** Holds the function's only slot: resolves once its environment is busy, `done` when it ends. */
async function holdTheSlot(s: LambdaService, ms: number): Promise<{ done: Promise<unknown> }> {
  const done = s.invoke('narrow', JSON.stringify({ sleep: ms }), caller);
  await vi.waitFor(() => expect(s.stats().Narrow!.environments.some((e) => e.state === 'busy')).toBe(true), {
    timeout: 5_000,
    interval: 10,
  });
  return { done };
}

describe('beyond the concurrency', () => {
  it('RequestResponse beyond the account concurrency is 429 with the account reason', async () => {
    const s = service(def({ reservedConcurrency: undefined }), [], 1);
    const { done } = await holdTheSlot(s, 600);
    await expect(s.invoke('narrow', '{}', caller)).rejects.toMatchObject({
      code: 'TooManyRequestsException',
      status: 429,
      message: 'Rate Exceeded. (ConcurrentInvocationLimitExceeded)',
    });
    await done;
  });

  it('an event (a Scheduler delivery) is accepted while throttled, retried with backoff, and runs once the slot frees', async () => {
    const s = service(def());
    const { done } = await holdTheSlot(s, 1_500);
    const file = mark();
    // Invoke accepts it at once: Scheduler sees a delivery, not a throttle.
    expect(s.invokeAsync('narrow', JSON.stringify({ mark: file }), caller).requestId).toBeTruthy();
    await done;
    expect(s.stats().Narrow!.throttles).toBeGreaterThanOrEqual(1);
    // Retried after 1 s, 2 s, ...: it runs within a few seconds of the slot freeing.
    // The event leaves the queue when its invocation returns, a moment after the handler wrote the
    // file (Node 24 in CI caught the gap between the two): wait for both.
    await vi.waitFor(
      () => {
        expect(existsSync(file)).toBe(true);
        expect(s.stats().Narrow!.queued).toBe(0);
      },
      { timeout: 8_000, interval: 50 },
    );
  });

  it('an event throttled until it is older than MaximumEventAgeInSeconds goes to the on-failure destination when it expires', async () => {
    const records: { condition: string; count: number; at: number }[] = [];
    const s = service(
      def({ asyncConfig: { maximumRetryAttempts: 2, maximumEventAgeMs: 1_200, onFailure: DLQ } }),
      records,
    );
    const { done } = await holdTheSlot(s, 4_000);
    const file = mark();
    const sentAt = Date.now();
    s.invokeAsync('narrow', JSON.stringify({ mark: file }), caller);
    await vi.waitFor(() => expect(records).toHaveLength(1), { timeout: 6_000, interval: 20 });
    expect(records[0]).toMatchObject({ condition: 'EventAgeExceeded', count: 0 });
    // Given up when it expired (1.2 s), not at the next backoff (the 2 s one would make it 3 s).
    expect(records[0]!.at - sentAt).toBeLessThan(2_200);
    await done;
    expect(existsSync(file)).toBe(false);
  });

  it('behind the HTTP API, a throttled integration is API Gateway 500, never the function answer', async () => {
    const s = service(def());
    const accessLog: Record<string, unknown>[] = [];
    const gateway = await startGateway({
      apiId: 'api',
      stage: '$default',
      region: 'us-east-1',
      accountId: ACCOUNT,
      routes: [
        {
          routeKey: 'POST /work',
          method: 'POST',
          path: '/work',
          authorization: 'NONE',
          integration: { functionArn: ARN, payloadFormatVersion: '2.0', timeoutMs: 10_000 },
        },
      ],
      throttle: undefined,
      identities,
      lambda: s,
      log: new AccessLog(),
      accessLog: (entry) => accessLog.push(entry),
    });
    try {
      const { done } = await holdTheSlot(s, 800);
      const response = await fetch(new URL('work', gateway.url), { method: 'POST', body: '{}' });
      expect([response.status, await response.json()]).toEqual([500, { message: 'Internal Server Error' }]);
      expect(String(accessLog.at(-1)!.integrationError)).toMatch(/^TooManyRequestsException/);
      await done;
    } finally {
      await gateway.close();
    }
  });
});
