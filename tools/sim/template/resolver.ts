/**
 * Gives every resource of the template the names and ARNs CloudFormation would give it in one
 * account and region, and resolves the intrinsic functions (Ref, Fn::GetAtt, Fn::Join, Fn::Sub,
 * Fn::Select, Fn::Split, Fn::If with the template's conditions) against them. Properties the sim
 * reads (environment, policies, schedule targets, routes) go through here, so a reference in the
 * template reaches the local resource it names.
 */
import type { Template } from './cloud-assembly.js';

export interface PhysicalResource {
  /** What Ref returns. */
  ref: string;
  /** What Fn::GetAtt returns, by attribute name. */
  attributes: Record<string, string>;
}

export interface Deployment {
  stackName: string;
  region: string;
  accountId: string;
  /** The API's endpoint, for the ApiEndpoint attribute and the ApiUrl output. */
  apiEndpoint: (apiId: string) => string;
}

const NO_VALUE = Symbol('AWS::NoValue');

/** A short, stable suffix like the ones CloudFormation appends to generated names. */
function suffix(logicalId: string): string {
  let h = 2166136261;
  for (const c of logicalId) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  return h.toString(36).toUpperCase().padStart(7, '0').slice(0, 7);
}

function generatedName(d: Deployment, logicalId: string, max: number): string {
  return `${d.stackName}-${logicalId}-${suffix(logicalId)}`.slice(0, max);
}

/** Physical names and ARNs per resource type (what `cdk deploy` would produce, in this account and region). */
function physicalResource(
  d: Deployment,
  logicalId: string,
  type: string,
  props: Record<string, unknown>,
): PhysicalResource {
  const { region, accountId } = d;
  const named = (key: string, max: number) =>
    typeof props[key] === 'string' ? (props[key] as string) : generatedName(d, logicalId, max);
  switch (type) {
    case 'AWS::DynamoDB::GlobalTable':
    case 'AWS::DynamoDB::Table': {
      const name = named('TableName', 255);
      return {
        ref: name,
        attributes: {
          Arn: `arn:aws:dynamodb:${region}:${accountId}:table/${name}`,
          StreamArn: `arn:aws:dynamodb:${region}:${accountId}:table/${name}/stream/sim`,
        },
      };
    }
    case 'AWS::Lambda::Function': {
      const name = named('FunctionName', 64);
      return { ref: name, attributes: { Arn: `arn:aws:lambda:${region}:${accountId}:function:${name}` } };
    }
    case 'AWS::IAM::Role': {
      const name = named('RoleName', 64);
      return {
        ref: name,
        attributes: { Arn: `arn:aws:iam::${accountId}:role/${name}`, RoleId: `AROA${suffix(name)}SIM` },
      };
    }
    case 'AWS::IAM::Policy':
      return { ref: named('PolicyName', 128), attributes: {} };
    case 'AWS::SQS::Queue': {
      const name = named('QueueName', 80);
      return {
        ref: `https://sqs.${region}.amazonaws.com/${accountId}/${name}`,
        attributes: {
          Arn: `arn:aws:sqs:${region}:${accountId}:${name}`,
          QueueName: name,
          QueueUrl: `https://sqs.${region}.amazonaws.com/${accountId}/${name}`,
        },
      };
    }
    case 'AWS::Logs::LogGroup': {
      const name = named('LogGroupName', 512);
      return { ref: name, attributes: { Arn: `arn:aws:logs:${region}:${accountId}:log-group:${name}:*` } };
    }
    case 'AWS::Scheduler::ScheduleGroup': {
      const name = named('Name', 64);
      return {
        ref: name,
        attributes: { Arn: `arn:aws:scheduler:${region}:${accountId}:schedule-group/${name}` },
      };
    }
    case 'AWS::Scheduler::Schedule': {
      const group = typeof props.GroupName === 'string' ? props.GroupName : 'default';
      const name = named('Name', 64);
      return {
        ref: name,
        attributes: { Arn: `arn:aws:scheduler:${region}:${accountId}:schedule/${group}/${name}` },
      };
    }
    case 'AWS::ApiGatewayV2::Api': {
      const id = suffix(logicalId).toLowerCase().padEnd(10, '0');
      return { ref: id, attributes: { ApiId: id, ApiEndpoint: d.apiEndpoint(id) } };
    }
    case 'AWS::KMS::Key': {
      const id = `${suffix(logicalId).toLowerCase()}-0000-4000-8000-000000000000`;
      return { ref: id, attributes: { Arn: `arn:aws:kms:${region}:${accountId}:key/${id}`, KeyId: id } };
    }
    default:
      return { ref: generatedName(d, logicalId, 128), attributes: {} };
  }
}

export class TemplateResolver {
  private readonly physical = new Map<string, PhysicalResource>();
  private readonly parameters: Record<string, unknown>;

  constructor(
    readonly template: Template,
    readonly deployment: Deployment,
    parameterValues: Record<string, string> = {},
  ) {
    for (const [id, r] of Object.entries(template.Resources))
      this.physical.set(id, physicalResource(deployment, id, r.Type, r.Properties ?? {}));
    this.parameters = Object.fromEntries(
      Object.entries(template.Parameters ?? {}).map(([k, p]) => [k, parameterValues[k] ?? p.Default ?? '']),
    );
  }

  /** The physical resource of a logical id (throws for an unknown id: the template is the only source). */
  resource(logicalId: string): PhysicalResource {
    const r = this.physical.get(logicalId);
    if (!r) throw new Error(`the template has no resource ${logicalId}`);
    return r;
  }

  /** A property value with every intrinsic function resolved. */
  resolve<T = unknown>(value: unknown): T {
    const out = this.walk(value);
    return (out === NO_VALUE ? undefined : out) as T;
  }

  /** Fn::If's condition, as the template defines it. */
  condition(name: string): boolean {
    const def = this.template.Conditions?.[name];
    if (def === undefined) throw new Error(`the template has no condition ${name}`);
    return Boolean(this.walk(def));
  }

  private pseudo(name: string): string | typeof NO_VALUE {
    const d = this.deployment;
    const values: Record<string, string> = {
      'AWS::Region': d.region,
      'AWS::AccountId': d.accountId,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
      'AWS::StackName': d.stackName,
      'AWS::StackId': `arn:aws:cloudformation:${d.region}:${d.accountId}:stack/${d.stackName}/sim`,
    };
    if (name === 'AWS::NoValue') return NO_VALUE;
    const v = values[name];
    if (v === undefined) throw new Error(`unsupported pseudo parameter ${name}`);
    return v;
  }

  private ref(name: string): unknown {
    if (name.startsWith('AWS::')) return this.pseudo(name);
    if (name in this.parameters) return this.parameters[name];
    return this.resource(name).ref;
  }

  private getAtt(target: unknown): string {
    const [id, attribute] = (
      typeof target === 'string' ? target.split('.') : (this.walk(target) as string[])
    ) as [string, string];
    const value = this.resource(id).attributes[attribute];
    if (value === undefined) throw new Error(`Fn::GetAtt ${id}.${attribute} is not supported by the sim`);
    return value;
  }

  private sub(template: string, vars: Record<string, unknown>): string {
    return template.replace(/\$\{([^}!]+)\}/g, (_, name: string) => {
      if (name in vars) return String(vars[name]);
      if (name.includes('.')) return this.getAtt(name);
      return String(this.ref(name));
    });
  }

  private walk(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.walk(v)).filter((v) => v !== NO_VALUE);
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [fn, arg] = entries[0]!;
      switch (fn) {
        case 'Ref':
          return this.ref(String(arg));
        case 'Fn::GetAtt':
          return this.getAtt(arg);
        case 'Fn::Join': {
          const [sep, parts] = arg as [string, unknown[]];
          return (this.walk(parts) as unknown[]).map(String).join(sep);
        }
        case 'Fn::Sub': {
          if (typeof arg === 'string') return this.sub(arg, {});
          const [text, vars] = arg as [string, Record<string, unknown>];
          return this.sub(text, this.walk(vars) as Record<string, unknown>);
        }
        case 'Fn::Select': {
          const [index, list] = arg as [unknown, unknown];
          return (this.walk(list) as unknown[])[Number(this.walk(index))];
        }
        case 'Fn::Split': {
          const [sep, text] = arg as [string, unknown];
          return String(this.walk(text)).split(sep);
        }
        case 'Fn::If': {
          const [cond, yes, no] = arg as [string, unknown, unknown];
          return this.condition(cond) ? this.walk(yes) : this.walk(no);
        }
        case 'Fn::Equals': {
          const [a, b] = arg as [unknown, unknown];
          return JSON.stringify(this.walk(a)) === JSON.stringify(this.walk(b));
        }
        case 'Fn::Not':
          return !this.walk((arg as unknown[])[0]);
        case 'Fn::And':
          return (arg as unknown[]).every((c) => this.walk(c));
        case 'Fn::Or':
          return (arg as unknown[]).some((c) => this.walk(c));
        case 'Condition':
          return this.condition(String(arg));
      }
      if (fn.startsWith('Fn::')) throw new Error(`unsupported intrinsic ${fn}`);
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of entries) {
      const resolved = this.walk(v);
      if (resolved !== NO_VALUE) out[k] = resolved;
    }
    return out;
  }
}
