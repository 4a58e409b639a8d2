/** Starts one sim for the whole suite (synth included) and hands its sim.json to the test files. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startSim, type RunningSim, type SimInfo } from '../../../tools/sim/sim.js';

declare module 'vitest' {
  export interface ProvidedContext {
    sim: SimInfo;
    simDataDir: string;
  }
}

let sim: RunningSim | undefined;

export async function setup(project: TestProject): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-sim-test-'));
  const log = join(dataDir, 'sim.log');
  sim = await startSim({ dataDir, log: (line) => writeFileSync(log, `${line}\n`, { flag: 'a' }) });
  process.stderr.write(
    `sim up in ${sim.info.startupMs} ms (data in ${dataDir}); API ${sim.info.apiUrl}; ${sim.info.dynamodb.backend} ${sim.info.dynamodb.version}\n`,
  );
  project.provide('sim', sim.info);
  project.provide('simDataDir', dataDir);
}

export async function teardown(): Promise<void> {
  await sim?.close();
}
