/**
 * The sim's IAM: the roles of the template with their policies (inline, and AWS::IAM::Policy
 * resources attached to them), sessions of those roles with their own temporary credentials (what a
 * function or Scheduler runs as), and the local callers the sim lets sign API requests. Every
 * request any sim service receives is checked here against the caller's policies.
 */
import { randomBytes } from 'node:crypto';
import { resourcesOfType } from '../template/cloud-assembly.js';
import type { TemplateResolver } from '../template/resolver.js';
import {
  evaluate,
  trusts,
  type AuthorizationRequest,
  type Decision,
  type PolicyDocument,
} from './policy-evaluator.js';
import type { Credentials } from './sigv4-verifier.js';

export interface SimPrincipal {
  /** A short name for people and sim.json. */
  name: string;
  /** arn:aws:sts::<account>:assumed-role/<role>/<session>, or arn:aws:iam::<account>:user/<name>. */
  arn: string;
  /** What API Gateway reports as userId / callerId. */
  userId: string;
  accountId: string;
  credentials: Credentials;
  policies: PolicyDocument[];
}

interface RoleDefinition {
  arn: string;
  name: string;
  roleId: string;
  trust: PolicyDocument;
  policies: PolicyDocument[];
}

/** AWS managed policies a CDK template may attach, with the statements that matter to the sim. */
const MANAGED_POLICIES: Record<string, PolicyDocument> = {
  'service-role/AWSLambdaBasicExecutionRole': {
    Statement: [
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: '*',
      },
    ],
  },
};

const newKey = (prefix: 'AKIA' | 'ASIA') => `${prefix}${randomBytes(8).toString('hex').toUpperCase()}`;
const newSecret = () => randomBytes(30).toString('base64');

export class IdentityStore {
  private readonly roles = new Map<string, RoleDefinition>();
  private readonly principals = new Map<string, SimPrincipal>();
  private readonly byKey = new Map<string, SimPrincipal>();
  readonly warnings: string[] = [];

  constructor(
    private readonly resolver: TemplateResolver,
    readonly accountId: string,
  ) {
    const attached = new Map<string, PolicyDocument[]>();
    for (const [, policy] of resourcesOfType(resolver.template, 'AWS::IAM::Policy')) {
      const props = resolver.resolve<{ PolicyDocument: PolicyDocument; Roles?: string[] }>(policy.Properties);
      for (const role of props.Roles ?? [])
        attached.set(role, [...(attached.get(role) ?? []), props.PolicyDocument]);
    }
    for (const [logicalId, role] of resourcesOfType(resolver.template, 'AWS::IAM::Role')) {
      const physical = resolver.resource(logicalId);
      const props = resolver.resolve<{
        AssumeRolePolicyDocument: PolicyDocument;
        Policies?: { PolicyDocument: PolicyDocument }[];
        ManagedPolicyArns?: string[];
      }>(role.Properties);
      const managed = (props.ManagedPolicyArns ?? []).flatMap((arn) => {
        const name = arn.replace(/^arn:aws:iam::aws:policy\//, '');
        const doc = MANAGED_POLICIES[name];
        if (!doc)
          this.warnings.push(
            `role ${physical.ref}: managed policy ${arn} is not known to the sim; its permissions are left out`,
          );
        return doc ? [doc] : [];
      });
      this.roles.set(physical.attributes.Arn!, {
        arn: physical.attributes.Arn!,
        name: physical.ref,
        roleId: physical.attributes.RoleId!,
        trust: props.AssumeRolePolicyDocument,
        policies: [
          ...(props.Policies ?? []).map((p) => p.PolicyDocument),
          ...(attached.get(physical.ref) ?? []),
          ...managed,
        ],
      });
    }
  }

  /** A session of a template role: what a function (or Scheduler) runs as. Same session name, same principal. */
  assumeRole(roleArn: string, sessionName: string): SimPrincipal {
    const role = this.roles.get(roleArn);
    if (!role) throw new Error(`no role ${roleArn} in the template`);
    const arn = `arn:aws:sts::${this.accountId}:assumed-role/${role.name}/${sessionName}`;
    return (
      this.principals.get(arn) ??
      this.register({
        name: `${role.name}/${sessionName}`,
        arn,
        userId: `${role.roleId}:${sessionName}`,
        accountId: this.accountId,
        credentials: {
          accessKeyId: newKey('ASIA'),
          secretAccessKey: newSecret(),
          sessionToken: randomBytes(48).toString('base64'),
        },
        policies: role.policies,
      })
    );
  }

  /** A local caller (an IAM user or a role session outside the template) with the given policies. */
  addCaller(name: string, arn: string, policies: PolicyDocument[]): SimPrincipal {
    const userId = `AIDA${randomBytes(8).toString('hex').toUpperCase()}`;
    return this.register({
      name,
      arn,
      userId,
      accountId: this.accountId,
      credentials: { accessKeyId: newKey('AKIA'), secretAccessKey: newSecret() },
      policies,
    });
  }

  private register(p: SimPrincipal): SimPrincipal {
    this.principals.set(p.arn, p);
    this.byKey.set(p.credentials.accessKeyId, p);
    return p;
  }

  byAccessKey(accessKeyId: string): SimPrincipal | undefined {
    return this.byKey.get(accessKeyId);
  }

  callers(): SimPrincipal[] {
    return [...this.principals.values()].filter(
      (p) => !p.arn.includes(':assumed-role/') || !this.isTemplateRoleSession(p.arn),
    );
  }

  private isTemplateRoleSession(arn: string): boolean {
    const roleName = /:assumed-role\/([^/]+)\//.exec(arn)?.[1];
    return [...this.roles.values()].some((r) => r.name === roleName);
  }

  decide(principalArn: string, request: AuthorizationRequest): Decision {
    const p = this.principals.get(principalArn);
    if (!p) return 'implicit-deny';
    return evaluate(p.policies, {
      ...request,
      context: {
        'aws:PrincipalArn': principalArn,
        'aws:PrincipalAccount': this.accountId,
        ...request.context,
      },
    });
  }

  isAllowed(
    principalArn: string,
    action: string,
    resource: string,
    context?: Record<string, string | string[]>,
  ): boolean {
    return this.decide(principalArn, { action, resource, ...(context ? { context } : {}) }) === 'allow';
  }

  /** Whether a service may assume a template role (its trust policy, with the caller's context keys). */
  canAssume(roleArn: string, service: string, context: Record<string, string>): boolean {
    const role = this.roles.get(roleArn);
    return role !== undefined && trusts(role.trust, service, 'sts:AssumeRole', context);
  }

  /** Every action each template role grants, for the "granted but never used" report. */
  grants(): { roleArn: string; roleName: string; actions: string[]; resources: string[] }[] {
    return [...this.roles.values()].map((r) => {
      const statements = r.policies.flatMap((p) => [p.Statement].flat()).filter((s) => s.Effect === 'Allow');
      return {
        roleArn: r.arn,
        roleName: r.name,
        actions: [...new Set(statements.flatMap((s) => [s.Action ?? []].flat()))],
        resources: [...new Set(statements.flatMap((s) => [s.Resource ?? []].flat()))],
      };
    });
  }
}
