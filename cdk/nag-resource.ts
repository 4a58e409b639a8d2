/**
 * A resource ARN as cdk-nag names it in a finding's id (`Resource::<text>`): the resolved value with
 * each reference written `<LogicalId>`, each attribute `<LogicalId.Attribute>` and each pseudo
 * parameter `<AWS::Name>`, so an acknowledgement can name one exact resource instead of a whole rule.
 */
import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

export function nagResourceText(scope: IConstruct, value: string): string {
  return format(Stack.of(scope).resolve(value));
}

function format(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if ('Ref' in v) return `<${String(v.Ref)}>`;
    if ('Fn::GetAtt' in v) return `<${(v['Fn::GetAtt'] as string[]).join('.')}>`;
    if ('Fn::Join' in v) {
      const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
      return parts.map(format).join(separator);
    }
  }
  throw new Error(`cannot name ${JSON.stringify(value)} as cdk-nag does`);
}
