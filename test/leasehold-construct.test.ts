/**
 * The Leasehold construct as a user adds it to a stack of their own: bundled with their task module
 * (the generated entries import it; the API serves its types' schemas), two in one stack without a
 * collision, the grants, cdk-nag clean, and a clear error for a task module that is missing or exports
 * no taskDefinitions.
 */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { Leasehold } from '../cdk/leasehold.js';
import { writeOpenApiDocument } from '../cdk/openapi-document.js';
import { ConfigError } from '../shared/errors.js';

const synthOptions = { env: { account: '123456789012', region: 'eu-west-1' } };
let app: App;
let stack: Stack;
let first: Leasehold;
let second: Leasehold;
let template: Template;

beforeAll(() => {
  app = new App();
  stack = new Stack(app, 'UserStack', synthOptions);
  first = new Leasehold(stack, 'Reports', { tasks: 'test/fixtures/report-tasks.ts' });
  second = new Leasehold(stack, 'Billing', {
    tasks: join(process.cwd(), 'test/fixtures/report-tasks.ts'),
    config: { workerMaxConcurrency: 3 },
    metricsNamespace: 'Billing',
  });
  // Its metrics namespace is its own by default: Leasehold/UserStack/Reports.
  const reader = new Role(stack, 'Reader', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
  first.grantEnqueue(reader);
  first.grantRead(reader);
  const operator = new Role(stack, 'Operator', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
  first.grantOperate(operator);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  template = Template.fromStack(stack);
}, 180_000);

describe('the Leasehold construct in a stack of its own', () => {
  it('two in one stack: each its own table, four functions, API and generated entries', () => {
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 2);
    template.resourceCountIs('AWS::Lambda::Function', 8);
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 2);
    expect(first.node.addr).not.toBe(second.node.addr);
    for (const construct of [first, second]) {
      const dir = join('node_modules/.cache/leasehold', construct.node.addr);
      expect(readdirSync(dir)).toEqual(
        expect.arrayContaining([
          'api.mjs',
          'fire.mjs',
          'openapi.json',
          'openapi.mjs',
          'recovery.mjs',
          'worker.mjs',
        ]),
      );
      expect(readFileSync(join(dir, 'worker.mjs'), 'utf8')).toMatch(
        /import \{ taskDefinitions \} from "\.\.\/\.\.\/\.\.\/\.\.\/test\/fixtures\/report-tasks\.ts";\nimport \{ createWorkerHandler \} from ".*shared\/lambda\/worker-entry\.ts";/,
      );
    }
    // Settings are per construct.
    const concurrency = Object.values(template.findResources('AWS::Lambda::Function')).map(
      (f) =>
        (f as { Properties: { Environment: { Variables: Record<string, string> } } }).Properties.Environment
          .Variables.LEASEHOLD_WORKER_MAX_CONCURRENCY,
    );
    expect(concurrency.filter((v) => v === '3')).toHaveLength(4);
    expect(concurrency.filter((v) => v === '10')).toHaveLength(4);
  });

  it('each writes and alarms on its own metrics namespace', () => {
    const namespaces = Object.values(template.findResources('AWS::Lambda::Function')).map(
      (f) =>
        (f as { Properties: { Environment: { Variables: Record<string, string> } } }).Properties.Environment
          .Variables.POWERTOOLS_METRICS_NAMESPACE,
    );
    expect(namespaces.sort()).toEqual([
      ...Array(4).fill('Billing'),
      ...Array(4).fill('Leasehold/UserStack/Reports'),
    ]);
    const alarmNamespaces = Object.values(template.findResources('AWS::CloudWatch::Alarm'))
      .flatMap((a) => JSON.stringify(a).match(/"Namespace":"(Leasehold[^"]*|Billing)"/g) ?? [])
      .map((m) => m.slice(13, -1));
    expect(new Set(alarmNamespaces)).toEqual(new Set(['Leasehold/UserStack/Reports', 'Billing']));
  });

  it("the API's document describes the deployment's own task types", () => {
    const dir = join('node_modules/.cache/leasehold', first.node.addr);
    const document = JSON.parse(readFileSync(join(dir, 'openapi.json'), 'utf8'));
    expect(document['x-leasehold-task-types'].map((t: { type: string }) => t.type)).toEqual([
      'reports.build',
    ]);
    expect(JSON.stringify(document)).not.toContain('demo.echo');
  });

  it('a task module that prints as it loads still gives its document (the generator writes a file, not stdout)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-openapi-'));
    const path = writeOpenApiDocument(dir, join(process.cwd(), 'test/fixtures/noisy-tasks.ts'));
    const document = JSON.parse(readFileSync(path, 'utf8'));
    expect(document['x-leasehold-task-types'].map((t: { type: string }) => t.type)).toEqual(['noisy.task']);
  });

  it('grantEnqueue, grantRead and grantOperate allow execute-api:Invoke on their routes only', () => {
    const policies = Object.entries(template.findResources('AWS::IAM::Policy')).filter(([, p]) =>
      JSON.stringify(p).includes('execute-api:Invoke'),
    );
    expect(policies.map(([id]) => id.replace(/[0-9A-F]{8}$/, '')).sort()).toEqual([
      'OperatorDefaultPolicy',
      'ReaderDefaultPolicy',
    ]);
    const operator = JSON.stringify(policies.find(([id]) => id.startsWith('Operator'))![1]);
    expect(operator).toContain('/$default/POST/types/*/pause"');
    expect(operator).toContain('/$default/POST/types/*/resume"');
    expect(operator).not.toContain('/tasks');
    const text = JSON.stringify(policies.find(([id]) => id.startsWith('Reader'))![1]);
    expect(text).toContain('/$default/GET/types"');
    expect(text).not.toContain('/pause');
    expect(text).not.toContain('/resume');
    expect(text).toContain('/$default/POST/tasks"');
    expect(text).toContain('/$default/POST/tasks/batch"');
    expect(text).toContain('/$default/POST/flows"');
    expect(text).toContain('/$default/GET/tasks/*"');
    expect(text).toContain('/$default/GET/stats"');
    expect(text).not.toContain('/$default/GET/*"');
    expect(text).not.toContain('DELETE');
    expect(text).not.toContain('/PUT/');
    expect(text).not.toContain('cancel');
  });

  it('cdk-nag finds nothing unacknowledged', () => {
    const assembly = app.synth();
    const report = JSON.parse(readFileSync(join(assembly.directory, 'validation-report.json'), 'utf8')) as {
      pluginReports: { pluginName: string; conclusion: string; violations: unknown[] }[];
    };
    const nag = report.pluginReports.find((p) => p.pluginName === 'AwsSolutions')!;
    expect(nag.violations).toEqual([]);
    expect(nag.conclusion).toBe('success');
  });

  it('a task module that is missing or exports no taskDefinitions, a stack without a region, or a second deployment on one metrics namespace fails the synth saying what to give', () => {
    const other = new Stack(new App(), 'Other', synthOptions);
    expect(() => new Leasehold(other, 'Missing', { tasks: 'src/tasks.ts' })).toThrow(ConfigError);
    expect(() => new Leasehold(other, 'Missing2', { tasks: 'src/tasks.ts' })).toThrow(
      /the task module .*src\/tasks\.ts does not exist \(tasks: 'src\/tasks\.ts', relative to .*\): give the file that exports taskDefinitions/,
    );
    const agnostic = new Stack(new App(), 'Agnostic');
    expect(() => new Leasehold(agnostic, 'Tasks', { tasks: 'test/fixtures/report-tasks.ts' })).toThrow(
      /Leasehold needs a stack with a region .*env: \{ account: process\.env\.CDK_DEFAULT_ACCOUNT, region: process\.env\.CDK_DEFAULT_REGION \}/,
    );
    expect(() => new Leasehold(other, 'NoExport', { tasks: 'test/fixtures/no-definitions.ts' })).toThrow(
      /could not be loaded to describe its types \(it must export taskDefinitions\): No matching export .* for import "taskDefinitions"/,
    );
    // Two on one metrics namespace in a stack (last: it adds to the tree the tests above synthesized).
    const third = () =>
      new Leasehold(stack, 'Third', { tasks: 'test/fixtures/report-tasks.ts', metricsNamespace: 'Billing' });
    expect(third).toThrow(
      /UserStack\/Billing writes its metrics to the namespace Billing already: give UserStack\/Third a metricsNamespace of its own/,
    );
  });
});
