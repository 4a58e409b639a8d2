/** The DynamoDB client and the few facts about its errors the store relies on. */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LeaseholdConfig } from '../config.js';

export function createDocumentClient(
  config: Pick<LeaseholdConfig, 'region' | 'dynamodbEndpoint'>,
  extra: DynamoDBClientConfig = {},
): DynamoDBDocumentClient {
  return documentClientFor(createDynamoClient(config, extra));
}

export function documentClientFor(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

export function createDynamoClient(
  config: Pick<LeaseholdConfig, 'region' | 'dynamodbEndpoint'>,
  extra: DynamoDBClientConfig = {},
): DynamoDBClient {
  const local = config.dynamodbEndpoint !== undefined;
  return new DynamoDBClient({
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

const TRANSIENT_NAMES = new Set([
  'AbortError',
  'TimeoutError',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

/**
 * True for a failure that says nothing about the write itself (our deadline, throttling, a server
 * or network fault): the write may or may not have applied, and trying it again is safe.
 */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const e = error as Error & { $fault?: string; $retryable?: unknown; code?: string };
  return (
    TRANSIENT_NAMES.has(e.name) ||
    e.$fault === 'server' ||
    Boolean(e.$retryable) ||
    ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT'].includes(e.code ?? '')
  );
}
