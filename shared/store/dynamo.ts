/** The DynamoDB client and the few facts about its errors the store relies on. */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LeaseholdConfig } from '../config.js';

export function createDocumentClient(
  config: Pick<LeaseholdConfig, 'region' | 'dynamodbEndpoint'>,
  extra: DynamoDBClientConfig = {},
): DynamoDBDocumentClient {
  const local = config.dynamodbEndpoint !== undefined;
  const client = new DynamoDBClient({
    region: config.region,
    ...(local
      ? {
          endpoint: config.dynamodbEndpoint,
          // An emulator accepts any credentials; real DynamoDB uses the default provider chain.
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }
      : {}),
    ...extra,
  });
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

export function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/**
 * True when the SDK sent the request more than once. A ConditionalCheckFailed then may be the echo
 * of our own first attempt, which applied although its answer was lost.
 */
export function wasRetried(error: unknown): boolean {
  const attempts = (error as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts;
  return typeof attempts === 'number' && attempts > 1;
}

/** Options for an SDK call on the lease path: a hard deadline, since the SDK's requestTimeout only warns. */
export function deadline(ms: number): { abortSignal: AbortSignal } {
  return { abortSignal: AbortSignal.timeout(ms) };
}
