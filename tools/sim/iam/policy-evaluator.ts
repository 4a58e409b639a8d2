/**
 * IAM's decision for one request, from identity policies as the template writes them: an explicit
 * Deny wins, else an Allow whose Action, Resource and Condition all match, else the implicit deny.
 * Pure. It covers what CloudFormation templates of this kind use (wildcards in actions and
 * resources, NotAction/NotResource, the String/Arn/Bool condition operators, ...IfExists, and the
 * ForAllValues:/ForAnyValue: set operators on multi-valued keys such as dynamodb:LeadingKeys); it does not
 * model permission boundaries, SCPs or session policies (a local sim has none).
 */

export interface PolicyStatement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: Record<string, Record<string, string | string[] | boolean>>;
  Principal?: unknown;
  Sid?: string;
}

export interface PolicyDocument {
  Statement: PolicyStatement | PolicyStatement[];
}

export interface AuthorizationRequest {
  action: string;
  resource: string;
  /** Condition keys and their values (aws:SourceArn, iam:PassedToService, ...); a list for a multi-valued key. */
  context?: Record<string, string | string[]>;
}

export type Decision = 'allow' | 'explicit-deny' | 'implicit-deny';

const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM wildcards: `*` any run of characters, `?` one character. */
export function wildcardMatch(pattern: string, value: string, caseInsensitive = false): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    caseInsensitive ? 'is' : 's',
  );
  return re.test(value);
}

function matchesAny(patterns: string[], value: string, caseInsensitive: boolean): boolean {
  return patterns.some((p) => wildcardMatch(p, value, caseInsensitive));
}

function conditionHolds(
  operator: string,
  key: string,
  expected: string | string[] | boolean,
  context: Record<string, string | string[]>,
): boolean {
  const found = Object.entries(context).find(([k]) => k.toLowerCase() === key.toLowerCase())?.[1];
  const set = /^(ForAllValues|ForAnyValue):/.exec(operator)?.[1];
  if (set) {
    const op = operator.slice(set.length + 1);
    const actuals = found === undefined ? [] : list(found);
    // IAM's documented edge: ForAllValues holds for an absent or empty key, ForAnyValue does not.
    return set === 'ForAllValues'
      ? actuals.every((a) => valueHolds(op, a, expected))
      : actuals.some((a) => valueHolds(op, a, expected));
  }
  const ifExists = operator.endsWith('IfExists');
  const op = ifExists ? operator.slice(0, -'IfExists'.length) : operator;
  const actual = Array.isArray(found) ? found[0] : found;
  if (actual === undefined)
    return ifExists || op === 'Null' ? op !== 'Null' || String(expected) === 'true' : false;
  return valueHolds(op, actual, expected);
}

/** One value against an operator (no IfExists, no set prefix). */
function valueHolds(op: string, actual: string, expected: string | string[] | boolean): boolean {
  const values = list(typeof expected === 'boolean' ? String(expected) : expected).map(String);
  switch (op) {
    case 'StringEquals':
    case 'ArnEquals':
      return values.includes(actual);
    case 'StringNotEquals':
    case 'ArnNotEquals':
      return !values.includes(actual);
    case 'StringEqualsIgnoreCase':
      return values.some((v) => v.toLowerCase() === actual.toLowerCase());
    case 'StringLike':
    case 'ArnLike':
      return values.some((v) => wildcardMatch(v, actual));
    case 'StringNotLike':
    case 'ArnNotLike':
      return !values.some((v) => wildcardMatch(v, actual));
    case 'Bool':
      return values.includes(actual);
    case 'Null':
      return String(expected) === 'false';
    default:
      throw new Error(`the sim does not evaluate the IAM condition operator ${op}`);
  }
}

function statementApplies(s: PolicyStatement, request: AuthorizationRequest): boolean {
  const actionOk =
    s.Action !== undefined
      ? matchesAny(list(s.Action), request.action, true)
      : !matchesAny(list(s.NotAction), request.action, true);
  if (!actionOk) return false;
  const resourceOk =
    s.Resource !== undefined
      ? matchesAny(list(s.Resource), request.resource, false)
      : s.NotResource !== undefined
        ? !matchesAny(list(s.NotResource), request.resource, false)
        : true;
  if (!resourceOk) return false;
  const context = request.context ?? {};
  return Object.entries(s.Condition ?? {}).every(([operator, keys]) =>
    Object.entries(keys).every(([key, expected]) => conditionHolds(operator, key, expected, context)),
  );
}

/** The decision of a set of identity policies for one request. */
export function evaluate(policies: PolicyDocument[], request: AuthorizationRequest): Decision {
  let allowed = false;
  for (const policy of policies) {
    for (const s of [policy.Statement].flat()) {
      if (!statementApplies(s, request)) continue;
      if (s.Effect === 'Deny') return 'explicit-deny';
      allowed = true;
    }
  }
  return allowed ? 'allow' : 'implicit-deny';
}

/** Does a trust (or resource) policy let this service principal in, with the given context? */
export function trusts(
  policy: PolicyDocument,
  service: string,
  action: string,
  context: Record<string, string>,
): boolean {
  return [policy.Statement].flat().some((s) => {
    if (s.Effect !== 'Allow') return false;
    const principal = s.Principal as { Service?: string | string[] } | undefined;
    if (!list(principal?.Service).includes(service)) return false;
    return statementApplies({ ...s, Resource: '*' }, { action, resource: '*', context });
  });
}
