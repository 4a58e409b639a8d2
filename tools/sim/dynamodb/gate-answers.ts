/** Answers the DynamoDB gate makes or rewrites, and the JSON bodies it reads. */
import type { BackendAnswer } from './backend.js';

export type Json = Record<string, unknown>;

/** Sends a request body (the client's own, or a rewritten one) to the emulator. */
export type Forward = (payload: Buffer | Json) => Promise<BackendAnswer>;

export const answer = (status: number, body: string): BackendAnswer => ({
  status,
  headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `sim-${Date.now()}` },
  body: Buffer.from(body),
});

/** An answer the gate rewrote: its checksum and length headers no longer hold. */
export const withBody = (original: BackendAnswer, body: Buffer): BackendAnswer => {
  const headers = { ...original.headers };
  delete headers['x-amz-crc32'];
  delete headers['content-length'];
  delete headers['transfer-encoding'];
  return { status: original.status, headers, body };
};

export const rewritten = (original: BackendAnswer, body: unknown) =>
  withBody(original, Buffer.from(JSON.stringify(body)));

/** DynamoDB's answer when none of a batch could run: BatchWriteItem's and BatchGetItem's API references name this exception. */
export const batchThrottled = (message: string, reason: { reason: string; resource: string }) =>
  JSON.stringify({
    __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    message,
    ThrottlingReasons: [{ reason: reason.reason, resource: reason.resource }],
  });
