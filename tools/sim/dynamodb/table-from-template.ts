/** CreateTable input from the template's own table resource: keys, attributes, GSIs and projections as deployed. */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

interface TableProperties {
  KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
  AttributeDefinitions: { AttributeName: string; AttributeType: 'S' | 'N' | 'B' }[];
  GlobalSecondaryIndexes?: {
    IndexName: string;
    KeySchema: { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
    Projection: { ProjectionType: 'ALL' | 'KEYS_ONLY' | 'INCLUDE'; NonKeyAttributes?: string[] };
    WarmThroughput?: WarmThroughputProperty;
  }[];
  WarmThroughput?: WarmThroughputProperty;
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

interface WarmThroughputProperty {
  ReadUnitsPerSecond?: number;
  WriteUnitsPerSecond?: number;
}

/** Units a second a table or GSI sustains from the start, where the template sets them. */
export interface WarmRates {
  read?: number;
  write?: number;
}

/**
 * The template's warm throughput, keyed as the sim's throttle names resources: the table's name, and
 * `<table>/index/<name>` for each GSI that sets one. Empty when none does (a new table's own rates).
 */
export function warmThroughputOf(name: string, props: TableProperties): Map<string, WarmRates> {
  const rates = new Map<string, WarmRates>();
  const add = (label: string, w: WarmThroughputProperty | undefined) => {
    if (!w) return;
    rates.set(label, {
      ...(w.ReadUnitsPerSecond !== undefined ? { read: Number(w.ReadUnitsPerSecond) } : {}),
      ...(w.WriteUnitsPerSecond !== undefined ? { write: Number(w.WriteUnitsPerSecond) } : {}),
    });
  };
  add(name, props.WarmThroughput);
  for (const g of props.GlobalSecondaryIndexes ?? []) add(`${name}/index/${g.IndexName}`, g.WarmThroughput);
  return rates;
}

/** The customer-managed key a table is encrypted with (a GlobalTable names it per replica). */
export function tableKmsKey(props: TableProperties): string | undefined {
  return props.SSESpecification?.KMSMasterKeyId ?? props.Replicas?.[0]?.SSESpecification?.KMSMasterKeyId;
}
