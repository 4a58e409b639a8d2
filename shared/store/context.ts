import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../clock.js';
import type { LeaseholdConfig } from '../config.js';
import type { IdGenerator, RandomSource } from '../ids.js';

/** What every store operation needs: the table, the checked config, and the injected clock and generators. */
export interface StoreContext {
  doc: DynamoDBDocumentClient;
  tableName: string;
  config: LeaseholdConfig;
  clock: Clock;
  newId: IdGenerator;
  random: RandomSource;
  /** Told before each claim or recovery write is sent (histories for fault testing). */
  onIntent?: (op: 'claim' | 'recover', taskId: string) => void;
}
