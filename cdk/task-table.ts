/** The task table, built from the single table-layout module: no second copy of key or index names. */
import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, Billing, ProjectionType, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { INDEX, KEY, TTL_ATTRIBUTE } from '../shared/table-layout.js';

const attributeType = (t: 'S' | 'N') => (t === 'S' ? AttributeType.STRING : AttributeType.NUMBER);

/**
 * A new on-demand table sustains 4,000 writes and 12,000 reads a second at first, and each of its
 * indexes as much; a peak above twice the last one within 30 minutes throttles. A start is three
 * table writes (enqueue, claim, outcome), two on `ready` (enqueue, claim) and on the lease index
 * (claim, outcome) with a renewal now and then, one on `owner` (enqueue only); a delayed start adds
 * two on `delays` (enqueue, promotion). This sizes warm throughput for a peak of `startsPerSecond`
 * (a one-time charge by AWS, so opt-in: `-c leasehold:peakStartsPerSecond=N`). The table gets more
 * than any index: an enqueue burst is held to what its indexes take (a base-table write waits for
 * every index it updates), so the table keeps room for the lease path while `owner` or `delays`
 * throttles the burst.
 */
export function warmThroughputFor(startsPerSecond: number): {
  table: { writeUnitsPerSecond: number; readUnitsPerSecond: number };
  indexes: Record<string, { writeUnitsPerSecond: number; readUnitsPerSecond: number }>;
} {
  // DynamoDB's floors for warm throughput are the new-table figures: never ask for less.
  const writes = (n: number) => Math.max(4_000, Math.ceil(n));
  const reads = (n: number) => Math.max(12_000, Math.ceil(n));
  return {
    // Writes: enqueue, claim, outcome, and a renewal now and then. Reads: a claim's share of the queries.
    table: { writeUnitsPerSecond: writes(3.5 * startsPerSecond), readUnitsPerSecond: reads(startsPerSecond) },
    indexes: {
      [INDEX.ready.name]: {
        writeUnitsPerSecond: writes(2 * startsPerSecond),
        readUnitsPerSecond: reads(startsPerSecond),
      },
      [INDEX.lease.name]: {
        writeUnitsPerSecond: writes(2.5 * startsPerSecond),
        readUnitsPerSecond: reads(0),
      },
      [INDEX.delay.name]: {
        writeUnitsPerSecond: writes(2 * startsPerSecond),
        readUnitsPerSecond: reads(0),
      },
      [INDEX.owner.name]: { writeUnitsPerSecond: writes(startsPerSecond), readUnitsPerSecond: reads(0) },
    },
  };
}

export interface TaskTableProps {
  /** Warm throughput for this peak of task starts a second (none: a new table's own 4,000 writes a second). */
  peakStartsPerSecond?: number | undefined;
}

export class TaskTable extends Construct {
  readonly table: TableV2;
  readonly key: Key;

  constructor(scope: Construct, id: string, props: TaskTableProps = {}) {
    super(scope, id);
    this.key = new Key(this, 'Key', {
      description: 'Leasehold task table encryption',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const warm =
      props.peakStartsPerSecond === undefined ? undefined : warmThroughputFor(props.peakStartsPerSecond);
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
      ...(warm ? { warmThroughput: warm.table } : {}),
      globalSecondaryIndexes: Object.values(INDEX).map((ix) => ({
        indexName: ix.name,
        ...(warm ? { warmThroughput: warm.indexes[ix.name] } : {}),
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
