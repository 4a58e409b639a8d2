/**
 * Direct mode: the client's task calls (`TaskClient`) straight on the task table, for code in the
 * deployment's account that may not go through API Gateway (a Lambda of the same application, a batch
 * job). It builds the runtime the API builds (request-runtime.ts) and takes a task through the API's own
 * checks (the body schema, the deployment's maximum execution time, the task type's schema and
 * timeout), so a task the API would refuse is refused here with the same error class, code and
 * fields, and nothing is written. Tasks are answered in the API's JSON (taskJson).
 *
 * Trusted code only. The owner is the client's own choice (the `owner` option, or its IAM identity as
 * a default, not a check): DynamoDB cannot tell one owner's task item from another's by key, so any
 * holder of these grants can act as any owner. Untrusted producers use the API, where the owner is the
 * caller's IAM identity. `directClientPolicy` (direct-policy.ts) is the narrowest policy it works with:
 * it keeps the client off the queue's control items (fleet seats, slots, summary, locks, schedules).
 *
 * What it needs: DynamoDB permissions only (that policy: GetItem, PutItem, UpdateItem, Query and
 * BatchGetItem on task items and its own counters, Query on the owner index, kms:Decrypt on the table's
 * customer-managed key); STS GetCallerIdentity needs none. What it does not do: schedules
 * (they need EventBridge Scheduler permissions and the stack's scheduler role: use the API), and,
 * unless `workerFunctionName` is given, the kick: the API starts a worker as a task arrives, while a
 * task enqueued directly waits for the worker's scheduled tick. That tick skips while recovery's queue
 * summary (written once a minute) shows no work, so the task starts after the next summary and the
 * tick after it: within about two minutes (115 s measured in the sim), unless a worker is running.
 */
import type * as z from 'zod';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { flowRequest } from '../api/flow-request.js';
import { listQuery } from '../api/request-schemas.js';
import { parseRequest } from '../api/parse-request.js';
import type { TaskJson } from '../api/response-schemas.js';
import { taskJson } from '../api/task-json.js';
import { systemClock, type Clock } from '../clock.js';
import type { LeaseholdConfig } from '../config.js';
import { createDynamoClient, documentClientFor } from '../store/dynamo.js';
import { writeTargetOf } from '../store/context.js';
import type { Task } from '../task-model.js';
import { createRequestRuntime, type RequestRuntime } from '../request-runtime.js';
import type { TaskDefinition } from '../tasks/define.js';
import type {
  BatchTask,
  ClientTask,
  EnqueueFlowResult,
  EnqueueManyOptions,
  EnqueueManyResult,
  EnqueueOptions,
  EnqueueResult,
  FinishedTask,
  Flow,
  ListFilter,
  TaskClient,
  TaskId,
  WaitOptions,
} from './client-types.js';
import { directEnqueueInput } from './direct-enqueue-input.js';
import { enqueueEach } from './direct-enqueue-many.js';
import { asClientCall } from './direct-errors.js';
import { directKick, type DirectKick } from './direct-kick.js';
import { directConfig, type DirectClientOptions } from './direct-options.js';
import { ownerSource, stsCallerArn } from './direct-owner.js';
import type { Sleep } from './http-transport.js';
import { eachItemOfPages } from './pages.js';
import { timerSleep } from './sleep.js';
import { waitForTask } from './wait-for.js';

export type { DirectClientOptions } from './direct-options.js';

/**
 * The task calls of `LeaseholdClient`, without `schedules` (see above). For trusted code only: it acts
 * as whichever owner it is given, which no permission can stop (use the API for untrusted producers).
 */
export interface DirectClient extends TaskClient {
  /**
   * Whose tasks these are: the given owner, or the caller's identity as the API sees it (looked up
   * once). Chosen by the client, not enforced: another owner's task is reachable by its id.
   */
  owner(): Promise<string>;
  /** The kicks sent and failed, with `workerFunctionName` (else undefined). */
  readonly kicks: { sent: number; failed: number } | undefined;
  /** Closes the SDK clients' connections. */
  close(): void;
}

export function createDirectClient(options: DirectClientOptions): DirectClient {
  const config = directConfig(options, process.env);
  const credentials = options.credentials;
  const dynamo = createDynamoClient(config, credentials === undefined ? {} : { credentials });
  const clock = options.clock ?? systemClock();
  // The API's request-only runtime: no claim or recovery code in a producer's bundle.
  const runtime = createRequestRuntime(config, [...options.definitions], {
    doc: documentClientFor(dynamo),
    clock,
  });
  const kick = directKick({
    functionName: options.workerFunctionName,
    endpoint: options.lambdaEndpoint,
    region: config.region,
    credentials,
    config,
    events: runtime.events,
    clock,
    table: writeTargetOf(runtime.store.ctx),
  });
  const owner = ownerSource(
    options.owner,
    options.callerArn ?? stsCallerArn({ region: config.region, credentials }),
  );
  return new DirectTaskClient(runtime, owner, { clock, sleep: options.sleep ?? timerSleep }, dynamo, kick);
}

/** A stored task as the API answers it. */
const clientTask = <P, R>(task: Task) => taskJson(task) as TaskJson as ClientTask<P, R>;

class DirectTaskClient implements DirectClient {
  private readonly config: LeaseholdConfig;

  constructor(
    private readonly runtime: Pick<RequestRuntime, 'store' | 'submitter' | 'config'>,
    readonly owner: () => Promise<string>,
    private readonly timing: { clock: Clock; sleep: Sleep },
    private readonly dynamo: DynamoDBClient,
    private readonly kick: DirectKick | undefined,
  ) {
    this.config = runtime.config;
  }

  get kicks() {
    return this.kick?.counts;
  }

  enqueue<S extends z.ZodType, R>(
    definition: TaskDefinition<S, R>,
    payload: z.input<S>,
    options?: EnqueueOptions,
  ): Promise<EnqueueResult<z.input<S>, Awaited<R>>>;
  enqueue(type: string, payload?: unknown, options?: EnqueueOptions): Promise<EnqueueResult>;
  enqueue(
    typeOrDefinition: string | TaskDefinition,
    payload?: unknown,
    options: EnqueueOptions = {},
  ): Promise<EnqueueResult> {
    const type = typeof typeOrDefinition === 'string' ? typeOrDefinition : typeOrDefinition?.name;
    return asClientCall(async () => {
      const input = directEnqueueInput(type, payload, options, await this.owner(), this.config);
      const { task, created, joined } = await this.runtime.submitter.enqueue(input);
      // Sent before the answer: a caller in a Lambda is frozen once it returns (bounded: a kick is a hint).
      await this.kick?.settled();
      return { task: clientTask(task), created, ...(joined ? { joined } : {}) };
    });
  }

  enqueueMany(
    tasks: Iterable<BatchTask> | AsyncIterable<BatchTask>,
    options: EnqueueManyOptions = {},
  ): Promise<EnqueueManyResult> {
    return enqueueEach(tasks, options, (task) => this.enqueue(task.type, task.payload, task.options));
  }

  /** Through the API's own checks (flow-request.ts, then the submitter): refused as POST /flows refuses it. */
  enqueueFlow<P, R>(flow: Flow<P, R>): Promise<EnqueueFlowResult<P, R>> {
    return asClientCall(async () => {
      const input = flowRequest(flow, await this.owner(), this.config);
      const { task, ids, created } = await this.runtime.submitter.enqueueFlow(input);
      // Sent before the answer, as for enqueue: a caller in a Lambda is frozen once it returns.
      await this.kick?.settled();
      return { id: task.id as TaskId<P, R>, ids, task: clientTask<P, R>(task), created };
    });
  }

  get<P, R>(id: TaskId<P, R>): Promise<ClientTask<P, R>> {
    return asClientCall(async () =>
      clientTask<P, R>(await this.runtime.store.get({ id, owner: await this.owner() })),
    );
  }

  /** Every task of the filter, newest first, reading the pages GET /tasks answers as the caller iterates. */
  list(filter: ListFilter = {}): AsyncIterable<ClientTask> {
    // Checked when the first page is read: a list that is never iterated reads and throws nothing.
    const checked = () =>
      asClientCall(async () => ({
        ...parseRequest(
          listQuery,
          { status: filter.status, type: filter.type, limit: filter.pageSize ?? 100 },
          'query',
        ),
        owner: await this.owner(),
      }));
    let query: ReturnType<typeof checked> | undefined;
    return eachItemOfPages(async (cursor) => {
      const { owner, limit, status, type } = await (query ??= checked());
      const page = await asClientCall(() =>
        this.runtime.store.list({
          owner,
          limit,
          ...(status ? { status } : {}),
          ...(type ? { type } : {}),
          ...(cursor ? { cursor } : {}),
        }),
      );
      return { items: page.tasks.map((t) => clientTask(t)), nextCursor: page.nextCursor };
    });
  }

  cancel<P, R>(id: TaskId<P, R>): Promise<ClientTask<P, R>> {
    return asClientCall(async () => {
      const task = await this.runtime.store.requestCancel({ id, owner: await this.owner() });
      // A queued task ends here: its count is written now, as the API does, since the caller's
      // process (a Lambda, a script) may freeze or exit before anything else would write it.
      await this.runtime.store.flushOutcomes();
      return clientTask<P, R>(task);
    });
  }

  retry<P, R>(id: TaskId<P, R>): Promise<ClientTask<P, R>> {
    return asClientCall(async () =>
      clientTask<P, R>(await this.runtime.store.retry({ id, owner: await this.owner() })),
    );
  }

  waitFor<P, R>(id: TaskId<P, R>, options: WaitOptions = {}): Promise<FinishedTask<P, R>> {
    return waitForTask(id, () => this.get(id), options, this.timing);
  }

  close(): void {
    this.kick?.close();
    this.dynamo.destroy();
  }
}
