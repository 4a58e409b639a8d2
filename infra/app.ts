/** The CDK app (`cdk.json` runs it): the Leasehold stack, checked by cdk-nag's AWS Solutions rules. */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LeaseholdStack } from './leasehold-stack.js';
import { acknowledgeFindings } from './nag-acknowledgements.js';

const app = new App();
const stack = new LeaseholdStack(app, process.env.LEASEHOLD_STACK_NAME ?? 'Leasehold', {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
acknowledgeFindings(stack);
