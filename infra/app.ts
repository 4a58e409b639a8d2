/** The CDK app (`cdk.json` runs it): the Leasehold stack, checked by cdk-nag's AWS Solutions rules. */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describeSettings, readDeploymentSettings } from '../cdk/deployment-settings.js';
import { LeaseholdStack } from './leasehold-stack.js';

const app = new App();
// Settings come from CDK context only; the deployer's LEASEHOLD_* shell variables are named and ignored.
const contextKeys = Object.keys(app.node.getAllContext());
const deployment = readDeploymentSettings((key) => app.node.tryGetContext(key), contextKeys);
process.stderr.write(`${describeSettings(deployment, Object.keys(process.env))}\n`);
new LeaseholdStack(app, deployment.stackName, {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  config: deployment.config,
  ...(deployment.workerReservedConcurrency === undefined
    ? {}
    : { workerReservedConcurrency: deployment.workerReservedConcurrency }),
  sourceMaps: deployment.sourceMaps,
  ...(deployment.peakStartsPerSecond === undefined
    ? {}
    : { peakStartsPerSecond: deployment.peakStartsPerSecond }),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
