/** The task table, built from the single table-layout module: no second copy of key or index names. */
import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, Billing, ProjectionType, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { INDEX, KEY, TTL_ATTRIBUTE } from '../shared/table-layout.js';

const attributeType = (t: 'S' | 'N') => (t === 'S' ? AttributeType.STRING : AttributeType.NUMBER);

export class TaskTable extends Construct {
  readonly table: TableV2;
  readonly key: Key;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.key = new Key(this, 'Key', {
      description: 'Leasehold task table encryption',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // TableV2 is an AWS::DynamoDB::GlobalTable with one replica. Never add a replica: conditional writes
    // are not serialised across regions (last writer wins), so two workers could both hold a lease.
    this.table = new TableV2(this, 'Table', {
      partitionKey: { name: KEY.partition, type: AttributeType.STRING },
      sortKey: { name: KEY.sort, type: AttributeType.STRING },
      billing: Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryptionV2.customerManagedKey(this.key),
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
      timeToLiveAttribute: TTL_ATTRIBUTE,
      globalSecondaryIndexes: Object.values(INDEX).map((ix) => ({
        indexName: ix.name,
        partitionKey: { name: ix.partition, type: AttributeType.STRING },
        sortKey: { name: ix.sort, type: attributeType(ix.sortType) },
        ...('include' in ix
          ? { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...ix.include] }
          : { projectionType: ProjectionType.KEYS_ONLY }),
      })),
    });
  }

  /** ARN of one index, for IAM statements scoped to exactly the index a function queries. */
  indexArn(name: string): string {
    return `${this.table.tableArn}/index/${name}`;
  }
}
