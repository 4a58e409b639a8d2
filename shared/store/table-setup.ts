/** Creates the table from the layout module (local stack, tests). The CDK stack builds the same shape. */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { LeaseholdError } from '../errors.js';
import { createTableInput } from '../table-layout.js';

/** Creates the table if it is missing and waits until it is ACTIVE (polling briefly: the SDK waiter's delays are 20 s). */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  timeoutMs = 30_000,
): Promise<void> {
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await untilTableActive(client, tableName, timeoutMs);
}

/** Waits until a table just created answers reads and writes. */
export function untilTableActive(
  client: DynamoDBClient,
  tableName: string,
  timeoutMs = 30_000,
): Promise<void> {
  return untilTableStatus(
    async () => (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table?.TableStatus,
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
