/** CreateTable input from the template's own table resource: keys, attributes, GSIs and projections as deployed. */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

interface TableProperties {
  KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
  AttributeDefinitions: { AttributeName: string; AttributeType: 'S' | 'N' | 'B' }[];
  GlobalSecondaryIndexes?: {
    IndexName: string;
    KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
    Projection: { ProjectionType: 'ALL' | 'KEYS_ONLY' | 'INCLUDE'; NonKeyAttributes?: string[] };
  }[];
  Replicas?: { SSESpecification?: { KMSMasterKeyId?: string } }[];
  SSESpecification?: { KMSMasterKeyId?: string };
}

export function createTableInputFrom(name: string, props: TableProperties): CreateTableCommandInput {
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: props.KeySchema,
    AttributeDefinitions: props.AttributeDefinitions,
    ...(props.GlobalSecondaryIndexes?.length
      ? {
          GlobalSecondaryIndexes: props.GlobalSecondaryIndexes.map((g) => ({
            IndexName: g.IndexName,
            KeySchema: g.KeySchema,
            Projection: g.Projection,
          })),
        }
      : {}),
  };
}

/** The customer-managed key a table is encrypted with (a GlobalTable names it per replica). */
export function tableKmsKey(props: TableProperties): string | undefined {
  return props.SSESpecification?.KMSMasterKeyId ?? props.Replicas?.[0]?.SSESpecification?.KMSMasterKeyId;
}
