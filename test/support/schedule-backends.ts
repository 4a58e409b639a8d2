/** The file's DynamoDB and a fake EventBridge Scheduler, started once per test file, for the schedule suites. */
import { afterAll, beforeAll } from 'vitest';
import { startFakeScheduler, type FakeScheduler } from './fake-scheduler.js';
import { startTestDynamo, type TestDynamo } from './test-dynamo.js';

export interface ScheduleBackends {
  readonly server: TestDynamo;
  readonly scheduler: FakeScheduler;
}

export function useScheduleBackends(): ScheduleBackends {
  let server: TestDynamo | undefined;
  let scheduler: FakeScheduler | undefined;
  beforeAll(async () => {
    server = await startTestDynamo();
    scheduler = await startFakeScheduler();
  });
  afterAll(async () => {
    await scheduler?.close();
    await server?.close();
  });
  return {
    get server() {
      return server!;
    },
    get scheduler() {
      return scheduler!;
    },
  };
}
