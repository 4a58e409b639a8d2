/** A fresh table on the file's DynamoDB (dynalite or DynamoDB Local, see test-dynamo.ts), and a store on it with a manual clock. */
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { defineConfig, type ConfigInput, type LeaseholdConfig } from '../../shared/config.js';
import { TaskStore } from '../../shared/store/task-store.js';
import { ensureTable } from '../../shared/store/table-setup.js';
import { ManualClock, sequentialIds } from './manual-clock.js';
import type { Clock } from '../../shared/clock.js';
import type { RateLimit } from '../../shared/rate-rules.js';
import type { TypeGrouping } from '../../shared/group-rules.js';
import { RequestMeter } from './request-meter.js';

let tableCounter = 0;

export interface TestStore {
  store: TaskStore;
  clock: ManualClock;
  /** The clock the stores use: the manual one unless a test passed its own. */
  storeClock: Clock;
  config: LeaseholdConfig;
  doc: DynamoDBDocumentClient;
  client: DynamoDBClient;
  meter: RequestMeter;
  /** Another store on the same table, as another process would have (own client, shared clock). */
  peer(overrides?: { random?: () => number; clock?: Clock }): TaskStore;
  scanAll(): Promise<Record<string, unknown>[]>;
}

export async function createTestStore(
  endpoint: string,
  overrides: ConfigInput = {},
  options: {
    random?: () => number;
    clock?: Clock;
    rateLimits?: Record<string, RateLimit>;
    grouping?: TypeGrouping;
  } = {},
): Promise<TestStore> {
  const config = defineConfig({
    tableName: `t${process.pid}-${++tableCounter}-${Date.now()}`,
    dynamodbEndpoint: endpoint,
    ...overrides,
  });
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 3,
  });
  const meter = new RequestMeter();
  meter.attach(client);
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  await ensureTable(client, config.tableName);
  const clock = new ManualClock();
  const storeClock = options.clock ?? clock;
  const store = new TaskStore({
    doc,
    config,
    clock: storeClock,
    newId: sequentialIds('t'),
    ...(options.random ? { random: options.random } : {}),
    ...(options.rateLimits ? { definitionRateLimits: options.rateLimits } : {}),
    ...(options.grouping ? { definitionGrouping: options.grouping } : {}),
  });
  let peers = 0;
  return {
    store,
    clock,
    storeClock,
    config,
    doc,
    client,
    meter,
    peer: (o = {}) => {
      const peerClient = new DynamoDBClient({
        endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
      const peerDoc = DynamoDBDocumentClient.from(peerClient, {
        marshallOptions: { removeUndefinedValues: true },
      });
      return new TaskStore({
        doc: peerDoc,
        config,
        clock: o.clock ?? storeClock,
        newId: sequentialIds(`p${++peers}`),
        ...(o.random ? { random: o.random } : {}),
        ...(options.rateLimits ? { definitionRateLimits: options.rateLimits } : {}),
        ...(options.grouping ? { definitionGrouping: options.grouping } : {}),
      });
    },
    scanAll: async () => {
      const items: Record<string, unknown>[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        const out = await doc.send(
          new ScanCommand({ TableName: config.tableName, ExclusiveStartKey: startKey, ConsistentRead: true }),
        );
        items.push(...(out.Items ?? []));
        startKey = out.LastEvaluatedKey;
      } while (startKey);
      return items;
    },
  };
}
