/**
 * `leasehold/client`: the typed HTTP client, its types and errors. The direct client (DynamoDB, no API
 * Gateway) is `leasehold/client/direct`, so HTTP-only callers do not load the DynamoDB, STS and Lambda SDKs.
 */
export * from './client-types.js';
export * from './errors.js';
export { taskOf } from './batch-task.js';
export { flowTaskOf } from './flow-task.js';
export { createClient, type ClientOptions } from './http-client.js';
export type { RetryPolicy } from './retry-policy.js';
export type { Credentials } from './sigv4.js';
