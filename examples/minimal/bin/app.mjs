// The whole CDK app: a stack of your own (in the region your AWS settings name) with a Leasehold task
// queue in it, bundled with src/tasks.ts.
import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import { Leasehold } from 'leasehold/cdk';

const app = new App();
const env = { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION };
const stack = new Stack(app, 'Greetings', { env });
const tasks = new Leasehold(stack, 'Tasks', { tasks: 'src/tasks.ts' });
new CfnOutput(stack, 'ApiUrl', { value: tasks.apiUrl });
