/**
 * For the sim-dynamodb tests: an in-process dynalite with one table (a GSI on gpk, TTL on `expires`),
 * the sim's IAM gate in front of it with the strictness options under test, and an SDK client signed
 * as a caller allowed everything.
 */
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynalite, type DynaliteServer } from '../tools/local/dynalite.js';
import { untilTableActive } from '../shared/store/table-setup.js';
import type { Backend } from '../tools/sim/dynamodb/backend.js';
import { startIamGate, type IamGate, type IamGateOptions } from '../tools/sim/dynamodb/iam-gate.js';
import { describeTable } from '../tools/sim/dynamodb/table-schemas.js';
import { TtlSweeper } from '../tools/sim/dynamodb/ttl-sweeper.js';
import { AccessLog } from '../tools/sim/iam/access-log.js';
import { IdentityStore } from '../tools/sim/iam/identity-store.js';
import { TemplateResolver } from '../tools/sim/template/resolver.js';

export const REGION = 'us-east-1';
export const ACCOUNT = '123456789012';
export const TABLE = 'strict-test';
export const TABLE_ARN = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${TABLE}`;
export const GSI = 'by-group';
export const GSI_ARN = `${TABLE_ARN}/index/${GSI}`;

export interface Harness {
  dynalite: DynaliteServer;
  gate: IamGate;
  client(maxAttempts?: number): DynamoDBClient;
  close(): Promise<void>;
}

export async function startHarness(
  options: Omit<IamGateOptions, 'backend' | 'region' | 'tables' | 'identities' | 'log'>,
  /** Runs against the bare emulator before the gate starts (items already there). */
  before?: (emulator: DynamoDBClient) => Promise<unknown>,
): Promise<Harness> {
  const dynalite = await startDynalite();
  const admin = new DynamoDBClient({
    endpoint: dynalite.endpoint,
    region: REGION,
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  await admin.send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'gpk', AttributeType: 'S' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: GSI,
          KeySchema: [{ AttributeName: 'gpk', KeyType: 'HASH' }],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    }),
  );
  await untilTableActive(admin, TABLE);
  await before?.(admin);
  admin.destroy();
  const identities = new IdentityStore(
    new TemplateResolver(
      { Resources: {} },
      { stackName: 'strict', region: REGION, accountId: ACCOUNT, apiEndpoint: () => 'http://127.0.0.1' },
    ),
    ACCOUNT,
  );
  const caller = identities.addCaller('tester', `arn:aws:iam::${ACCOUNT}:user/tester`, [
    { Statement: [{ Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' }] },
  ]);
  const gate = await startIamGate({
    backend: dynalite.endpoint,
    region: REGION,
    tables: [{ name: TABLE, arn: TABLE_ARN, ttlAttribute: 'expires' }],
    identities,
    log: new AccessLog(),
    ...options,
  });
  const clients: DynamoDBClient[] = [];
  return {
    dynalite,
    gate,
    client: (maxAttempts = 1) => {
      const c = new DynamoDBClient({
        endpoint: gate.endpoint,
        region: REGION,
        credentials: caller.credentials,
        maxAttempts,
      });
      clients.push(c);
      return c;
    },
    close: async () => {
      for (const c of clients) c.destroy();
      await gate.close();
      await dynalite.close();
    },
  };
}

/** A random source that answers these values in turn, then repeats the last. */
export function draws(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)]!;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A promise and the function that resolves it. */
export function signal(): { fire: () => void; fired: Promise<void> } {
  let fire!: () => void;
  const fired = new Promise<void>((resolve) => (fire = resolve));
  return { fire, fired };
}

/** A TTL sweeper of the table through this backend, deleting at its first sweep, sweeping only when asked. */
export async function sweeperThrough(backend: Backend): Promise<TtlSweeper> {
  const schema = await describeTable(backend, { name: TABLE, arn: TABLE_ARN, ttlAttribute: 'expires' });
  return new TtlSweeper(backend, [schema], { maxDelayMs: 0, sweepEveryMs: 60_000 }, () => () => {});
}
