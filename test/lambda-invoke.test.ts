/**
 * The lean asynchronous Invoke (shared/fleet/lambda-invoke.ts) against the sim's Invoke endpoint: its
 * SigV4 signature is checked with the caller's real IAM decision, the event reaches the function, and,
 * bundled into a function as the stack bundles it (the credential chain aliased to the environment's),
 * it carries the invocation's trace header as the SDK's client did: a self-invoking chain is one
 * chain to Lambda's loop detection (the sim's limit lowered to 3). Refusals come back typed, and only
 * transient ones are retried.
 */
import { build } from 'esbuild';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LAMBDA_ALIASES } from '../cdk/lambda-bundling.js';
import { LambdaAsyncInvoke, LambdaInvokeError } from '../shared/fleet/lambda-invoke.js';
import { AccessLog } from '../tools/sim/iam/access-log.js';
import type { InvokeServer } from '../tools/sim/lambda/invoke-server.js';
import type { LambdaService } from '../tools/sim/lambda/lambda-service.js';
import { lineageOf } from '../tools/sim/lambda/trace-lineage.js';
import {
  ACCOUNT,
  addUser,
  arnOf,
  chainFunctionDefinition,
  identitiesWithRole,
  jsonLines,
  REGION,
  startInvokeStack,
  uniqueFile,
  writeBundle,
} from './support/sim-lambda-fixtures.js';

const DLQ = `arn:aws:sqs:${REGION}:${ACCOUNT}:lean-failures`;

// Each invocation appends what it saw to event.log, then invokes its own function again with the
// lean Invoke until event.until.
const root = writeBundle(
  'lambda-invoke-',
  `
const fs = require('node:fs');
const { LambdaAsyncInvoke } = require('./lean-invoke.js');
const invoker = new LambdaAsyncInvoke();
exports.handler = async (event, context) => {
  fs.appendFileSync(event.log, JSON.stringify({ n: event.n, trace: process.env._X_AMZN_TRACE_ID }) + '\\n');
  if (event.n >= event.until) return { n: event.n };
  await invoker.invoke(context.functionName, JSON.stringify({ ...event, n: event.n + 1 }), AbortSignal.timeout(5000));
  return { n: event.n };
};
`,
);

const identities = identitiesWithRole({
  stackName: 'lean-invoke-test',
  logicalId: 'LeanRole',
  roleName: 'lean-role',
  invokes: arnOf('lean'),
});
const caller = addUser(identities, 'caller', 'lambda:InvokeFunction', arnOf('lean'));
const stranger = addUser(identities, 'stranger', 'lambda:GetFunction', '*');

let server: InvokeServer;
let lambda: LambdaService;
const records: unknown[] = [];

beforeAll(async () => {
  // Bundled as the stack bundles it: the SDK's credential chain replaced by the environment's.
  await build({
    entryPoints: [join(import.meta.dirname, '../shared/fleet/lambda-invoke.ts')],
    outfile: join(root, 'lean-invoke.js'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    alias: LAMBDA_ALIASES,
    logLevel: 'silent',
  });
  ({ server, lambda } = await startInvokeStack({
    definitions: [
      chainFunctionDefinition({
        name: 'lean',
        logicalId: 'Lean',
        taskRoot: root,
        roleName: 'lean-role',
        onFailure: DLQ,
      }),
    ],
    identities,
    log: new AccessLog(),
    service: {
      recursionLimit: 3,
      cpuLimit: false,
      destinations: async (_destination, _fn, record) => void records.push(JSON.parse(record)),
    },
  }));
});
afterAll(async () => {
  await lambda?.close();
  await server?.close();
});

/** What each hop of a chain appended to its log: its number and the trace id its runtime got. */
const seen = (file: string) => jsonLines<{ n: number; trace: string }>(file);

const invokerAs = (who: typeof caller) =>
  new LambdaAsyncInvoke({ region: REGION, endpoint: server.endpoint, credentials: who.credentials });

describe('LambdaAsyncInvoke through the sim endpoint', () => {
  it('a chain of its own Invokes is one chain to loop detection: it stops at the limit', async () => {
    const log = uniqueFile(root, 'chain', '.jsonl');
    const invoker = invokerAs(caller);
    await invoker.invoke('lean', JSON.stringify({ log, n: 1, until: 10 }), AbortSignal.timeout(5_000));
    invoker.destroy();
    await vi.waitFor(() => expect(records).toHaveLength(1), { timeout: 20_000, interval: 50 });
    const hops = seen(log);
    expect(hops.map((h) => h.n)).toEqual([1, 2, 3]);
    // The trace header went out with each Invoke: one hash, one hop more each time.
    const lineages = hops.map((h) => lineageOf(h.trace));
    expect(lineages.map((l) => l?.hops)).toEqual([1, 2, 3]);
    expect(new Set(lineages.map((l) => l?.hash)).size).toBe(1);
    expect(records[0]).toMatchObject({
      requestContext: { condition: 'RecursiveInvocationDetected' },
      requestPayload: { log, n: 4, until: 10 },
    });
    expect(lambda.stats().Lean!.metrics.RecursiveInvocationsDropped).toBe(1);
  });

  it('an ARN as the name reaches the same function (the path is encoded and signed as sent)', async () => {
    const log = uniqueFile(root, 'arn', '.jsonl');
    const invoker = invokerAs(caller);
    await invoker.invoke(arnOf('lean'), JSON.stringify({ log, n: 1, until: 1 }), AbortSignal.timeout(5_000));
    invoker.destroy();
    await vi.waitFor(() => expect(seen(log).map((h) => h.n)).toEqual([1]), { timeout: 10_000, interval: 50 });
  });

  it('refusals are typed and not retried; a caller without the permission is AccessDenied', async () => {
    const invoker = invokerAs(stranger);
    const denied = await invoker.invoke('lean', '{}', AbortSignal.timeout(5_000)).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(LambdaInvokeError);
    expect(denied).toMatchObject({ type: 'AccessDeniedException', httpStatus: 403, transient: false });
    const missing = await invokerAs(caller)
      .invoke('ghost', '{}', AbortSignal.timeout(5_000))
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 'LAMBDA_INVOKE_FAILED', httpStatus: expect.any(Number) });
    expect((missing as LambdaInvokeError).transient).toBe(false);
    invoker.destroy();
  });

  it('a dropped connection is retried until the deadline, then reported as transient', async () => {
    // Nothing listens on this port: every attempt fails to connect.
    const invoker = new LambdaAsyncInvoke({
      region: REGION,
      endpoint: 'http://127.0.0.1:9',
      credentials: caller.credentials,
    });
    const started = Date.now();
    const error = await invoker.invoke('lean', '{}', AbortSignal.timeout(2_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LambdaInvokeError);
    expect((error as LambdaInvokeError).transient).toBe(true);
    // Three attempts with 50 and 150 ms between them, well inside the deadline.
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(Date.now() - started).toBeLessThan(2_000);
    invoker.destroy();
  });
});
