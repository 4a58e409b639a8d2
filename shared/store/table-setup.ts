/** Creates the table from the layout module (local stack, tests). The CDK stack builds the same shape. */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  ScanCommand,
  UpdateTableCommand,
  type AttributeValue,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { LeaseholdError } from '../errors.js';
import { createTableInput } from '../table-layout.js';

/**
 * Creates the table if it is missing and waits until it is ACTIVE (polling briefly: the SDK waiter's
 * delays are 20 s). A table kept from an earlier version (the local stack's data directory) gets the
 * indexes the layout added since, one at a time as DynamoDB allows, as a deploy adds them on AWS.
 * dynalite answers such an update but adds nothing: with `rebuild` (the local stack's own embedded
 * dynalite, never a table elsewhere) the table is then made anew with its items; without, a
 * TableLayoutOutdatedError says what to do.
 */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  timeoutMs = 30_000,
  options: { rebuild?: boolean } = {},
): Promise<void> {
  const wanted = createTableInput(tableName);
  try {
    await client.send(new CreateTableCommand(wanted));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await untilTableActive(client, tableName, timeoutMs);
  const have = new Set(
    ((await describe(client, tableName))?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName),
  );
  for (const index of wanted.GlobalSecondaryIndexes ?? []) {
    if (have.has(index.IndexName)) continue;
    const keys = new Set(index.KeySchema!.map((k) => k.AttributeName));
    const addIndex = (create: typeof index) =>
      client.send(
        new UpdateTableCommand({
          TableName: tableName,
          AttributeDefinitions: wanted.AttributeDefinitions!.filter((a) => keys.has(a.AttributeName)),
          GlobalSecondaryIndexUpdates: [{ Create: create }],
        }),
      );
    await addIndex(index).catch((error: unknown) => {
      // dynalite (the local stack's emulator) wants a provisioned throughput on a new index even on an
      // on-demand table, where DynamoDB and DynamoDB Local refuse one.
      if (!/provisionedThroughput/i.test(String((error as Error).message))) throw error;
      return addIndex({ ...index, ProvisionedThroughput: { ReadCapacityUnits: 1, WriteCapacityUnits: 1 } });
    });
    const added = (await describe(client, tableName))?.GlobalSecondaryIndexes ?? [];
    if (!added.some((g) => g.IndexName === index.IndexName)) {
      if (!options.rebuild) throw new TableLayoutOutdatedError(tableName, index.IndexName!);
      await rebuildTable(client, wanted, timeoutMs);
      return;
    }
    await untilIndexActive(client, tableName, index.IndexName!, timeoutMs);
  }
}

const describe = async (client: DynamoDBClient, tableName: string) =>
  (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;

/** The table made anew in the current layout with every item it held (an emulator's local data only). */
async function rebuildTable(
  client: DynamoDBClient,
  wanted: CreateTableCommandInput,
  timeoutMs: number,
): Promise<void> {
  const tableName = wanted.TableName!;
  const items: Record<string, AttributeValue>[] = [];
  let ExclusiveStartKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey }),
    );
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  await client.send(new DeleteTableCommand({ TableName: tableName }));
  await untilTableStatus(
    async () => (await describe(client, tableName))?.TableStatus,
    'GONE',
    tableName,
    timeoutMs,
  );
  await client.send(new CreateTableCommand(wanted));
  await untilTableActive(client, tableName, timeoutMs);
  for (let i = 0; i < items.length; i += 25) {
    let writes = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (writes.length > 0) {
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: writes } }));
      writes = (out.UnprocessedItems?.[tableName] ?? []) as typeof writes;
    }
  }
}

/** Waits until an index just added has been built (the table answers queries on it only then). */
function untilIndexActive(
  client: DynamoDBClient,
  tableName: string,
  indexName: string,
  timeoutMs: number,
): Promise<void> {
  return untilTableStatus(
    async () => {
      const Table = await describe(client, tableName);
      const index = Table?.GlobalSecondaryIndexes?.find((g) => g.IndexName === indexName);
      return Table?.TableStatus === 'ACTIVE' && index?.IndexStatus === 'ACTIVE'
        ? 'ACTIVE'
        : index?.IndexStatus;
    },
    'ACTIVE',
    `${tableName} (index ${indexName})`,
    timeoutMs,
  );
}

/** Waits until a table just created answers reads and writes. */
export function untilTableActive(
  client: DynamoDBClient,
  tableName: string,
  timeoutMs = 30_000,
): Promise<void> {
  return untilTableStatus(
    async () => (await describe(client, tableName))?.TableStatus,
    'ACTIVE',
    tableName,
    timeoutMs,
  );
}

/**
 * Waits until a table reaches a status (`GONE`: describe answers it does not exist). A table answers
 * writes only once ACTIVE, and its name is free again only once gone: dynalite flips both on a timer
 * after CreateTable or DeleteTable has answered, so a request sent at once can lose that race on a busy
 * machine, as real DynamoDB's slower flips always would.
 */
export async function untilTableStatus(
  describe: () => Promise<string | undefined>,
  want: 'ACTIVE' | 'GONE',
  tableName: string,
  timeoutMs = 30_000,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const status = await describe().catch((error: unknown) => {
      if (errorName(error) === 'ResourceNotFoundException') return 'GONE';
      throw error;
    });
    if (status === want) return;
    if (Date.now() > until) throw new TableNotActiveError(tableName, timeoutMs, want);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The SDK's exception name, or an emulator client's short error type. */
function errorName(error: unknown): string | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const e = error as { name?: string; type?: string };
  return e.type ?? e.name;
}

/** A kept table lacks an index of the current layout and its endpoint cannot add one. */
export class TableLayoutOutdatedError extends LeaseholdError {
  override name = 'TableLayoutOutdatedError';
  override readonly code = 'TABLE_LAYOUT_OUTDATED';
  override readonly status = 500;
  constructor(
    readonly tableName: string,
    readonly indexName: string,
  ) {
    super(
      `Table ${tableName} has no index "${indexName}" and its endpoint did not add one: it was made by an earlier version. Recreate the table (for the local stack, move its data directory aside or leave LEASEHOLD_DYNAMODB_ENDPOINT unset so the stack rebuilds its own)`,
    );
  }
}

/** The table did not reach a status in time: a setup problem of the deployment or local stack, not of a request. */
export class TableNotActiveError extends LeaseholdError {
  override name = 'TableNotActiveError';
  override readonly code = 'TABLE_NOT_ACTIVE';
  override readonly status = 500;
  constructor(
    readonly tableName: string,
    readonly timeoutMs: number,
    readonly wanted: 'ACTIVE' | 'GONE' = 'ACTIVE',
  ) {
    super(`Table ${tableName} is not ${wanted === 'GONE' ? 'deleted' : 'ACTIVE'} after ${timeoutMs} ms`);
  }
}
