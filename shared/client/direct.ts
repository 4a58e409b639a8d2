/** `leasehold/client/direct`: the direct client, with the same types and errors as `leasehold/client`. */
export * from './index.js';
export { createDirectClient, type DirectClient, type DirectClientOptions } from './direct-client.js';
export { directClientPolicy, type DirectPolicyInput } from './direct-policy.js';
