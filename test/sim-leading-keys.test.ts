/**
 * dynamodb:LeadingKeys in the sim's IAM gate (tools/sim/dynamodb/leading-keys.ts) and the set operators the
 * evaluator applies to it: the partition values each kind of request touches, and how
 * ForAllValues/ForAnyValue decide on them (IAM's rule: ForAllValues holds for an absent key).
 */
import { describe, expect, it } from 'vitest';
import { leadingKeys } from '../tools/sim/dynamodb/leading-keys.js';
import type { TableSchema } from '../tools/sim/dynamodb/table-schemas.js';
import { evaluate, type PolicyDocument } from '../tools/sim/iam/policy-evaluator.js';

const schema = {
  name: 'T',
  arn: 'arn:aws:dynamodb:us-east-1:123456789012:table/T',
  hashKey: 'pk',
  rangeKey: 'sk',
  gsis: [{ name: 'ready', arn: '', hashKey: 'readyPk', rangeKey: 'readySk', projected: 'ALL' }],
  lsis: [],
} as unknown as TableSchema;
const schemaOf = (table: string) => (table === 'T' ? schema : undefined);
const S = (s: string) => ({ S: s });

describe('leadingKeys', () => {
  it('names the partition of an item request, and every one of a batch', () => {
    expect(
      leadingKeys('GetItem', { TableName: 'T', Key: { pk: S('TASK#1'), sk: S('TASK') } }, schemaOf),
    ).toEqual(['TASK#1']);
    expect(
      leadingKeys('PutItem', { TableName: 'T', Item: { pk: S('FLEET'), sk: S('SEAT#0') } }, schemaOf),
    ).toEqual(['FLEET']);
    expect(
      leadingKeys(
        'BatchGetItem',
        {
          RequestItems: {
            T: {
              Keys: [
                { pk: S('TASK#1'), sk: S('TASK') },
                { pk: S('QUEUE'), sk: S('X') },
              ],
            },
          },
        },
        schemaOf,
      ),
    ).toEqual(['TASK#1', 'QUEUE']);
    expect(
      leadingKeys(
        'BatchWriteItem',
        {
          RequestItems: {
            T: [
              { PutRequest: { Item: { pk: S('A'), sk: S('1') } } },
              { DeleteRequest: { Key: { pk: S('B'), sk: S('2') } } },
            ],
          },
        },
        schemaOf,
      ),
    ).toEqual(['A', 'B']);
  });

  it("names a Query's partition, the index's on an index, by name or placeholder; a Scan names none", () => {
    const query = (extra: Record<string, unknown>) =>
      leadingKeys(
        'Query',
        { TableName: 'T', ExpressionAttributeValues: { ':p': S('FLEET'), ':s': S('x') }, ...extra },
        schemaOf,
      );
    expect(query({ KeyConditionExpression: 'pk = :p' })).toEqual(['FLEET']);
    expect(
      query({ KeyConditionExpression: '#k = :p AND sk > :s', ExpressionAttributeNames: { '#k': 'pk' } }),
    ).toEqual(['FLEET']);
    expect(query({ IndexName: 'ready', KeyConditionExpression: 'readyPk = :p' })).toEqual(['FLEET']);
    // The table's partition key is not the index's: nothing is named.
    expect(query({ IndexName: 'ready', KeyConditionExpression: 'pk = :p' })).toEqual([]);
    expect(leadingKeys('Scan', { TableName: 'T' }, schemaOf)).toBeUndefined();
  });
});

describe('the set operators on dynamodb:LeadingKeys', () => {
  const policy: PolicyDocument = {
    Statement: [
      {
        Effect: 'Allow',
        Action: 'dynamodb:*',
        Resource: '*',
        Condition: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TASK#*'] },
          Null: { 'dynamodb:LeadingKeys': ['false'] },
        },
      },
    ],
  };
  const decide = (keys: string[] | undefined) =>
    evaluate([policy], {
      action: 'dynamodb:GetItem',
      resource: 'T',
      ...(keys === undefined ? {} : { context: { 'dynamodb:LeadingKeys': keys } }),
    });

  it('ForAllValues: every value must match; Null false: the key must be there', () => {
    expect(decide(['TASK#1'])).toBe('allow');
    expect(decide(['TASK#1', 'TASK#2'])).toBe('allow');
    expect(decide(['TASK#1', 'FLEET'])).toBe('implicit-deny');
    // Absent: ForAllValues alone would hold (IAM's rule); the Null condition refuses it.
    expect(decide(undefined)).toBe('implicit-deny');
  });

  it('ForAnyValue: one match is enough, none (or no key) is not', () => {
    const any: PolicyDocument = {
      Statement: [
        {
          Effect: 'Allow',
          Action: 'dynamodb:*',
          Resource: '*',
          Condition: { 'ForAnyValue:StringEquals': { 'dynamodb:LeadingKeys': ['FLEET'] } },
        },
      ],
    };
    const decideAny = (keys: string[] | undefined) =>
      evaluate([any], {
        action: 'dynamodb:Query',
        resource: 'T',
        ...(keys === undefined ? {} : { context: { 'dynamodb:LeadingKeys': keys } }),
      });
    expect(decideAny(['TASK#1', 'FLEET'])).toBe('allow');
    expect(decideAny(['TASK#1'])).toBe('implicit-deny');
    expect(decideAny(undefined)).toBe('implicit-deny');
  });
});
