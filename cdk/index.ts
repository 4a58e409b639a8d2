/**
 * `leasehold/cdk`: the construct that puts a Leasehold task queue in your own CDK stack, and what its
 * props and grants name. aws-cdk-lib, constructs and esbuild are peer dependencies of this entry.
 */
export { Leasehold, type LeaseholdProps } from './leasehold.js';
export type { FunctionName } from './function-entries.js';
export { readDeploymentSettings, CONTEXT_PREFIX, type DeploymentSettings } from './deployment-settings.js';
