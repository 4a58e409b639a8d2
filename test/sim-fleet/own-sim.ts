/** A sim of the test's own, synthesized with its CDK context, and what its scenarios read from it. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../shared/store/dynamo.js';
import { defineConfig } from '../../shared/config.js';
import { createTaskRuntime } from '../../shared/task-runtime.js';
import { taskDefinitions } from '../../tasks/catalog.js';
import { startSim, type RunningSim, type SimOptions } from '../../tools/sim/sim.js';
import { apiOf, simState, type Answer } from '../sim/support/sim-client.js';

export interface OwnSim {
  sim: RunningSim;
  api(method: string, path: string, body?: unknown): Promise<Answer>;
  state(): ReturnType<typeof simState>;
  /**
   * Writes `count` tasks straight into the table through the gate (signed as the admin; the index view
   * sees them, throttling applies), as fast as a few requests in flight go: a backlog that, unlike
   * enqueues through the API, kicks no worker.
   */
  enqueueDirect(count: number, task: { type: string; payload: unknown }): Promise<void>;
  /** Seats held now (a consistent read of the fleet's items through the gate, signed as the admin). */
  seatsHeld(): Promise<number>;
  close(): Promise<void>;
}

export async function startOwnSim(
  name: string,
  options: Omit<SimOptions, 'dataDir' | 'log'>,
): Promise<OwnSim> {
  const dataDir = mkdtempSync(join(tmpdir(), `leasehold-${name}-`));
  const log = join(dataDir, 'sim.log');
  const sim = await startSim({
    ...options,
    dataDir,
    log: (line) => writeFileSync(log, `${line}\n`, { flag: 'a' }),
  });
  process.stderr.write(`${name}: sim up in ${sim.info.startupMs} ms (data in ${dataDir})\n`);
  const admin = sim.info.callers.find((c) => c.name === 'admin')!;
  const config = defineConfig({
    tableName: sim.info.dynamodb.tables[0]!,
    region: sim.info.region,
    dynamodbEndpoint: sim.info.dynamodb.gatedEndpoint,
  });
  const doc = createDocumentClient(config, {
    credentials: { accessKeyId: admin.accessKeyId, secretAccessKey: admin.secretAccessKey },
  });
  const runtime = createTaskRuntime(config, taskDefinitions, { doc });
  return {
    sim,
    enqueueDirect: async (count, task) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next++ < count) await runtime.submitter.enqueue({ ...task, owner: admin.arn });
        }),
      );
    },
    api: (method, path, body) => apiOf(sim.info, method, path, body),
    state: () => simState(0, sim.info),
    seatsHeld: async () => {
      const out = await doc.send(
        new QueryCommand({
          TableName: config.tableName,
          KeyConditionExpression: 'pk = :p',
          ExpressionAttributeValues: { ':p': 'FLEET' },
          ConsistentRead: true,
        }),
      );
      const now = Date.now();
      return (out.Items ?? []).filter((i) => i.holder !== undefined && Number(i.until ?? 0) > now).length;
    },
    close: () => sim.close(),
  };
}
