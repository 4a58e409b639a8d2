/**
 * The sim's Lambda recursive loop detection: the Lineage of the trace header goes from Lambda to the
 * runtime (`_X_AMZN_TRACE_ID`), out with the real AWS SDK's calls (its recursion-detection middleware
 * sends it as X-Amzn-Trace-Id) and back into the Invoke endpoint, one hop further each time; past the
 * limit (lowered to 3 here, Lambda's is 16) the next invocation is stopped unless the function's
 * RecursiveLoop is Allow: RecursiveInvocationException to a synchronous caller, the on-failure
 * destination for an event, and the RecursiveInvocationsDropped metric either way.
 */
import { InvokeCommand, type LambdaClient, RecursiveInvocationException } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AccessLog } from '../tools/sim/iam/access-log.js';
import type { SimPrincipal } from '../tools/sim/iam/identity-store.js';
import type { InvokeServer } from '../tools/sim/lambda/invoke-server.js';
import type { FunctionDefinition, LambdaService } from '../tools/sim/lambda/lambda-service.js';
import { isStopped, lineageOf, nextHop } from '../tools/sim/lambda/trace-lineage.js';
import {
  ACCOUNT,
  addUser,
  arnOf,
  chainFunctionDefinition,
  identitiesWithRole,
  jsonLines,
  REGION,
  requireLambdaSdk,
  startInvokeStack,
  uniqueFile,
  writeBundle,
} from './support/sim-lambda-fixtures.js';

const DLQ = `arn:aws:sqs:${REGION}:${ACCOUNT}:loop-failures`;

// Each invocation appends what it saw to event.log, then invokes its own function again until event.until,
// synchronously or as an event, with the real SDK (which forwards the trace header by itself).
const root = writeBundle(
  'sim-lambda-recursion-',
  `
const fs = require('node:fs');
${requireLambdaSdk}
const client = new LambdaClient({ maxAttempts: 1 });
exports.handler = async (event, context) => {
  fs.appendFileSync(event.log, JSON.stringify({ n: event.n, trace: process.env._X_AMZN_TRACE_ID }) + '\\n');
  if (event.n >= event.until) return { n: event.n };
  try {
    const out = await client.send(new InvokeCommand({
      FunctionName: context.functionName,
      InvocationType: event.sync ? 'RequestResponse' : 'Event',
      Payload: JSON.stringify({ ...event, n: event.n + 1 }),
    }));
    return { n: event.n, next: out.Payload && out.Payload.length ? JSON.parse(Buffer.from(out.Payload).toString()) : out.StatusCode };
  } catch (error) {
    return { n: event.n, stoppedBy: error.name, status: error.$metadata && error.$metadata.httpStatusCode };
  }
};
`,
);

const identities = identitiesWithRole({
  stackName: 'recursion-test',
  logicalId: 'LoopRole',
  roleName: 'loop-role',
  invokes: [arnOf('loop'), arnOf('allowed')],
});
const caller = addUser(identities, 'caller', 'lambda:InvokeFunction', '*');

const def = (name: string, logicalId: string, extra: Partial<FunctionDefinition> = {}): FunctionDefinition =>
  chainFunctionDefinition({ name, logicalId, taskRoot: root, roleName: 'loop-role', onFailure: DLQ }, extra);

let server: InvokeServer;
let lambda: LambdaService;
let clientFor: (who: SimPrincipal) => LambdaClient;
const records: { destination: string; record: any }[] = [];

beforeAll(async () => {
  ({
    server,
    lambda,
    client: clientFor,
  } = await startInvokeStack({
    definitions: [def('loop', 'Loop'), def('allowed', 'Allowed', { recursiveLoop: 'Allow' })],
    identities,
    log: new AccessLog(),
    service: {
      recursionLimit: 3,
      // This file is about the chain, not the CPU: full speed keeps the nested cold starts short.
      cpuLimit: false,
      destinations: async (destination, _fn, record) =>
        void records.push({ destination, record: JSON.parse(record) }),
    },
  }));
});
afterAll(async () => {
  await lambda?.close();
  await server?.close();
});

const client = () => clientFor(caller);
const logFile = (name: string) => uniqueFile(root, name, '.jsonl');
/** What each hop of a chain appended to its log: its number and the trace id its runtime got. */
const seen = (file: string) => jsonLines<{ n: number; trace: string }>(file);

describe('the trace lineage rules', () => {
  it('reads the current and the first Lineage formats, and counts one hop per invocation', () => {
    expect(lineageOf('Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0;Lineage=4:fe460cdd:0')).toEqual({
      hops: 4,
      hash: 'fe460cdd',
    });
    expect(lineageOf('Root=1-x;Sampled=1;Lineage=a87bd80c:1|68fd508a:5|c512fbe3:2')).toEqual({
      hops: 5,
      hash: '68fd508a',
    });
    expect(lineageOf('Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0')).toBeUndefined();
    expect(lineageOf(undefined)).toBeUndefined();
    const first = nextHop(undefined, arnOf('loop'));
    expect(first.hops).toBe(1);
    expect(nextHop(first, arnOf('other'))).toEqual({ hops: 2, hash: first.hash });
    // Sixteen run; the seventeenth is stopped, unless the function allows loops.
    expect(isStopped({ hops: 16, hash: first.hash }, 16, undefined)).toBe(false);
    expect(isStopped({ hops: 17, hash: first.hash }, 16, 'Terminate')).toBe(true);
    expect(isStopped({ hops: 17, hash: first.hash }, 16, 'Allow')).toBe(false);
  });
});

describe('recursive loop detection through the Invoke endpoint', () => {
  it('an asynchronous self-invoking chain runs to the limit; the next event goes to the on-failure destination and is counted', async () => {
    const log = logFile('async');
    const out = await client().send(
      new InvokeCommand({
        FunctionName: 'loop',
        InvocationType: 'Event',
        Payload: JSON.stringify({ log, n: 1, until: 10 }),
      }),
    );
    expect(out.StatusCode).toBe(202);
    await vi.waitFor(() => expect(records).toHaveLength(1), { timeout: 20_000, interval: 50 });
    const hops = seen(log);
    expect(hops.map((h) => h.n)).toEqual([1, 2, 3]);
    // One chain: the same hash, one hop more each time, in the trace id each invocation's runtime got.
    const lineages = hops.map((h) => lineageOf(h.trace));
    expect(lineages.map((l) => l?.hops)).toEqual([1, 2, 3]);
    expect(new Set(lineages.map((l) => l?.hash)).size).toBe(1);
    expect(records[0]).toMatchObject({
      destination: DLQ,
      record: {
        requestContext: { condition: 'RecursiveInvocationDetected', approximateInvokeCount: 0 },
        requestPayload: { log, n: 4, until: 10 },
      },
    });
    expect(lambda.stats().Loop!.metrics.RecursiveInvocationsDropped).toBe(1);
  });

  it('a synchronous chain: the call past the limit is RecursiveInvocationException (400) to the function that made it', async () => {
    const log = logFile('sync');
    const before = lambda.stats().Loop!.metrics.RecursiveInvocationsDropped;
    const out = await client().send(
      new InvokeCommand({
        FunctionName: 'loop',
        Payload: JSON.stringify({ log, n: 1, until: 10, sync: true }),
      }),
    );
    const body = JSON.parse(Buffer.from(out.Payload!).toString());
    expect(body).toEqual({
      n: 1,
      next: { n: 2, next: { n: 3, stoppedBy: 'RecursiveInvocationException', status: 400 } },
    });
    expect(seen(log).map((h) => h.n)).toEqual([1, 2, 3]);
    expect(lambda.stats().Loop!.metrics.RecursiveInvocationsDropped).toBe(before + 1);
  });

  it('a caller whose trace header is already past the limit is refused with the SDK exception', async () => {
    const c = client();
    c.middlewareStack.add(
      (next) => async (args) => {
        (args.request as { headers: Record<string, string> }).headers['X-Amzn-Trace-Id'] =
          'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0;Lineage=3:0badcafe:0';
        return next(args);
      },
      { step: 'build' },
    );
    const error = await c
      .send(
        new InvokeCommand({
          FunctionName: 'loop',
          Payload: JSON.stringify({ log: logFile('x'), n: 1, until: 1 }),
        }),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(RecursiveInvocationException);
    expect((error as RecursiveInvocationException).$metadata.httpStatusCode).toBe(400);
    expect((error as RecursiveInvocationException).message).toMatch(/recursive loop/);
  });

  it('RecursiveLoop: Allow lets the chain go past the limit', async () => {
    const log = logFile('allowed');
    await client().send(
      new InvokeCommand({
        FunctionName: 'allowed',
        InvocationType: 'Event',
        Payload: JSON.stringify({ log, n: 1, until: 6 }),
      }),
    );
    await vi.waitFor(() => expect(seen(log).map((h) => h.n)).toEqual([1, 2, 3, 4, 5, 6]), {
      timeout: 20_000,
      interval: 50,
    });
    expect(lineageOf(seen(log)[5]!.trace)?.hops).toBe(6);
    expect(lambda.stats().Allowed!.metrics.RecursiveInvocationsDropped).toBe(0);
  });
});
