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
  const until = Date.now() + timeoutMs;
  for (;;) {
    const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (out.Table?.TableStatus === 'ACTIVE') return;
    if (Date.now() > until) throw new TableNotActiveError(tableName, timeoutMs);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The table did not become ACTIVE in time: a setup problem of the deployment or local stack, not of a request. */
export class TableNotActiveError extends LeaseholdError {
  override name = 'TableNotActiveError';
  override readonly code = 'TABLE_NOT_ACTIVE';
  override readonly status = 500;
  constructor(
    readonly tableName: string,
    readonly timeoutMs: number,
  ) {
    super(`Table ${tableName} is not ACTIVE after ${timeoutMs} ms`);
  }
}
