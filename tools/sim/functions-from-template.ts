/**
 * Each AWS::Lambda::Function of the template as the sim runs it: the asset `cdk deploy` would upload,
 * the template's Handler, Runtime, Timeout, MemorySize, ReservedConcurrentExecutions, RecursiveLoop and
 * Environment (references resolved to the local resources), the variables Lambda itself sets, the function's
 * EventInvokeConfig (or Lambda's defaults) and the AWS::Lambda::Permission statements about it.
 */
import { dirname } from 'node:path';
import { resourcesOfType, type CloudAssembly } from './template/cloud-assembly.js';
import type { TemplateResolver } from './template/resolver.js';
import { LAMBDA_ASYNC_DEFAULTS, type AsyncInvokeConfig } from './lambda/async-invoke-queue.js';
import type { FunctionDefinition } from './lambda/lambda-service.js';
import { nodeForRuntime } from './lambda/node-runtime.js';

interface FunctionProperties {
  FunctionName?: string;
  Handler: string;
  Runtime: string;
  Timeout?: number;
  MemorySize?: number;
  ReservedConcurrentExecutions?: number;
  RecursiveLoop?: 'Allow' | 'Terminate';
  Role: string;
  Code: { S3Key?: string };
  Environment?: { Variables?: Record<string, string> };
  LoggingConfig?: { LogGroup?: string };
}

export interface SimEndpoints {
  dynamodb: string;
  scheduler: string;
  /** Lambda's Invoke API (a function starting another function's invocation). */
  lambda: string;
}

export function functionsFromTemplate(
  assembly: CloudAssembly,
  resolver: TemplateResolver,
  endpoints: SimEndpoints,
  logFor: (logicalId: string) => (line: string) => void,
  notice: (line: string) => void,
): FunctionDefinition[] {
  const { template } = assembly;
  const { region } = resolver.deployment;
  const asyncConfigs = new Map<string, AsyncInvokeConfig>();
  for (const [, r] of resourcesOfType(template, 'AWS::Lambda::EventInvokeConfig')) {
    const p = resolver.resolve<{
      FunctionName: string;
      MaximumRetryAttempts?: number;
      MaximumEventAgeInSeconds?: number;
      DestinationConfig?: { OnFailure?: { Destination: string }; OnSuccess?: { Destination: string } };
    }>(r.Properties);
    asyncConfigs.set(p.FunctionName, {
      maximumRetryAttempts: p.MaximumRetryAttempts ?? LAMBDA_ASYNC_DEFAULTS.maximumRetryAttempts,
      maximumEventAgeMs:
        (p.MaximumEventAgeInSeconds ?? LAMBDA_ASYNC_DEFAULTS.maximumEventAgeMs / 1000) * 1000,
      ...(p.DestinationConfig?.OnFailure ? { onFailure: p.DestinationConfig.OnFailure.Destination } : {}),
      ...(p.DestinationConfig?.OnSuccess ? { onSuccess: p.DestinationConfig.OnSuccess.Destination } : {}),
    });
  }
  const permissions = resourcesOfType(template, 'AWS::Lambda::Permission').map(([, r]) =>
    resolver.resolve<{ FunctionName: string; Principal: string; SourceArn?: string; Action: string }>(
      r.Properties,
    ),
  );

  return resourcesOfType(template, 'AWS::Lambda::Function').map(([logicalId, r]) => {
    const p = resolver.resolve<FunctionProperties>(r.Properties);
    const { ref: name, attributes } = resolver.resource(logicalId);
    const arn = attributes.Arn!;
    const taskRoot = p.Code.S3Key ? assembly.assetDirForObjectKey(p.Code.S3Key) : undefined;
    if (!taskRoot)
      throw new Error(
        `function ${logicalId}: its code is not an asset of ${assembly.dir} (inline code and images are not simulated)`,
      );
    const node = nodeForRuntime(p.Runtime, notice);
    if (node.notice) notice(`${logicalId}: ${node.notice}`);
    const memoryMb = p.MemorySize ?? 128;
    const environment: Record<string, string> = {
      // What Lambda sets in every Node.js environment (the function's name, handler and task root, the
      // log stream and the credentials are added per execution environment).
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_LAMBDA_LOG_GROUP_NAME: p.LoggingConfig?.LogGroup ?? `/aws/lambda/${name}`,
      AWS_EXECUTION_ENV: `AWS_Lambda_${p.Runtime}`,
      LAMBDA_RUNTIME_DIR: dirname(node.path),
      LANG: 'en_US.UTF-8',
      TZ: ':UTC',
      PATH: `${dirname(node.path)}:/usr/local/bin:/usr/bin:/bin`,
      // Where the AWS SDK finds the local services instead of AWS's (AWS_ENDPOINT_URL_<SERVICE>).
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      AWS_ENDPOINT_URL_SCHEDULER: endpoints.scheduler,
      AWS_ENDPOINT_URL_LAMBDA: endpoints.lambda,
      // The template's own environment last: nothing of the sim's shell reaches the function.
      ...(p.Environment?.Variables ?? {}),
    };
    return {
      logicalId,
      name,
      arn,
      handler: p.Handler,
      runtime: p.Runtime,
      taskRoot,
      timeoutMs: (p.Timeout ?? 3) * 1000,
      memoryMb,
      reservedConcurrency: p.ReservedConcurrentExecutions,
      ...(p.RecursiveLoop ? { recursiveLoop: p.RecursiveLoop } : {}),
      roleArn: p.Role,
      nodePath: node.path,
      environment,
      asyncConfig: asyncConfigs.get(arn) ?? asyncConfigs.get(name) ?? LAMBDA_ASYNC_DEFAULTS,
      resourcePolicy: permissions
        .filter((perm) => perm.FunctionName === arn || perm.FunctionName === name)
        .map((perm) => ({
          principal: perm.Principal,
          action: perm.Action,
          ...(perm.SourceArn ? { sourceArn: perm.SourceArn } : {}),
        })),
      log: logFor(logicalId),
    };
  });
}
