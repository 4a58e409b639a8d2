/**
 * The DynamoDB a test file runs against, chosen by LEASEHOLD_TEST_BACKEND: `dynalite` (the default, in
 * this process, starts in milliseconds) or `dynamodb-local` (Amazon's DynamoDB Local, one JVM per test
 * file; `npm run test:dynamodb-local`), so behaviour only dynalite has cannot make a test pass.
 */
import { startDynalite } from '../../tools/local/dynalite.js';
import { startDynamoDbLocal } from '../../tools/sim/dynamodb/dynamodb-local.js';

export type TestBackend = 'dynalite' | 'dynamodb-local';

export interface TestDynamo {
  backend: TestBackend;
  endpoint: string;
  close(): Promise<void>;
}

export function testBackend(): TestBackend {
  const value = process.env.LEASEHOLD_TEST_BACKEND || 'dynalite';
  if (value === 'dynalite' || value === 'dynamodb-local') return value;
  throw new Error(`LEASEHOLD_TEST_BACKEND must be "dynalite" or "dynamodb-local", not "${value}"`);
}

/** Starts the chosen backend, empty, on an ephemeral port. Without java, dynamodb-local fails: a run that asked for it must not pass on dynalite. */
export async function startTestDynamo(): Promise<TestDynamo> {
  const backend = testBackend();
  const server = backend === 'dynalite' ? await startDynalite() : await startDynamoDbLocal();
  return { backend, endpoint: server.endpoint, close: () => server.close() };
}
