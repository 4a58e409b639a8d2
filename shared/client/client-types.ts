/**
 * The client's API, shared by the HTTP client (`createClient`, http-client.ts) and the direct client
 * (`createDirectClient`, direct-client.ts): the same calls, types and errors whichever way a task goes in.
 * Types only: the payload and result types come from a task definition (`defineTask`), so a wrong
 * payload is a compile error; a type given by name takes any payload (the API still checks it).
 */
import type * as z from 'zod';
import type { TaskDefinition } from '../tasks/define.js';
import type {
  FireJson,
  ScheduleJson,
  TaskJson,
  TypeControlAnswerJson,
  TypesJson,
} from '../api/response-schemas.js';
import type { TaskStatus } from '../task-model.js';

declare const taskTypes: unique symbol;

/**
 * A task id that remembers its task's payload and result types (a string at run time): `waitFor` and
 * `get` on an id from `enqueue(definition, ...)` answer with typed `payload` and `result`.
 */
export type TaskId<P = unknown, R = unknown> = string & {
  readonly [taskTypes]?: { payload: P; result: R };
};

/** A task as the API shows it (times in ISO-8601), with its payload and result typed. */
export type ClientTask<P = unknown, R = unknown> = Omit<TaskJson, 'id' | 'payload' | 'result'> & {
  id: TaskId<P, R>;
  /** As it was sent (the schema's input): the handler parses it again with its schema. */
  payload?: P;
  result?: R;
};

/** A finished task (SUCCESS, FAILED or CANCELLED): what `waitFor` resolves with. */
export type FinishedTask<P = unknown, R = unknown> = ClientTask<P, R> & {
  status: Extract<TaskStatus, 'SUCCESS' | 'FAILED' | 'CANCELLED'>;
};

/** The payload a definition's schema accepts (its input: defaults may be left out). */
export type PayloadOf<D> = D extends TaskDefinition<infer S, unknown> ? z.input<S> : never;
/** What a definition's handler resolves to: the task's `result`. */
export type ResultOf<D> = D extends TaskDefinition<z.ZodType, infer R> ? Awaited<R> : never;

export interface EnqueueOptions {
  /** Higher runs first (-1000..1000). */
  priority?: number;
  /** Milliseconds to wait before the task is due (over HTTP rounded up to whole seconds). Not with `runAt`. */
  delay?: number;
  /** When the task is due. Not with `delay`. */
  runAt?: Date | string;
  /**
   * Enqueues with this key return the first task instead of a second one (per caller). Without one the
   * HTTP client makes one per call, so resending after a lost answer cannot enqueue twice.
   */
  idempotencyKey?: string;
  /**
   * Its group (1-128 printable ASCII characters, no spaces; named within the caller): at most the type's
   * `groupConcurrency` tasks of one group run at once (default 1: one at a time, in claim order).
   */
  group?: string;
  /**
   * Enqueues with the same `key` (per caller and type) within `windowMs` of each other collapse into one
   * task, due `windowMs` after the last, with the last payload (`joined` in the answer). Not with
   * `idempotencyKey`, `delay` or `runAt`.
   */
  debounce?: { key: string; windowMs: number };
  maxAttempts?: number;
  /** Milliseconds a run may take, at most the type's timeout (over HTTP rounded up to whole seconds). */
  timeout?: number;
}

export interface EnqueueResult<P = unknown, R = unknown> {
  task: ClientTask<P, R>;
  /** False when the idempotency key matched an earlier enqueue, whose task this is. */
  created: boolean;
  /** With `debounce`: this enqueue joined the key's waiting task (its due time and payload moved). */
  joined?: boolean;
}

/** One task of `enqueueMany`: build it with `taskOf(definition, payload)` to have the payload checked. */
export interface BatchTask {
  type: string;
  payload?: unknown;
  options?: EnqueueOptions;
}

/** What `enqueueMany` answered for one task, `index` its position in the input. */
export type BatchOutcome =
  | { index: number; outcome: 'created' | 'existing'; task: ClientTask }
  | { index: number; outcome: 'failed'; error: Error };

export interface EnqueueManyOptions {
  /** Called after each batch is answered, with that batch's outcomes and the running totals. */
  onBatch?: (outcomes: BatchOutcome[], totals: BatchTotals) => void;
  /** Keep every outcome in the result (default true); false for inputs of any size (totals only). */
  keepOutcomes?: boolean;
  /** Batches in flight at once (default 2). */
  concurrency?: number;
  signal?: AbortSignal;
}

export interface BatchTotals {
  created: number;
  existing: number;
  failed: number;
}

export interface EnqueueManyResult extends BatchTotals {
  /** In input order (empty with `keepOutcomes: false`). */
  outcomes: BatchOutcome[];
}

/**
 * One task of a flow, as POST /flows takes it: its times in whole seconds, as the API takes them (no
 * delay, run time, debounce or key of its own: a child is due at once, a parent when its children have
 * ended). Build it with `flowTaskOf(definition, payload)` to have the payload checked at compile time.
 */
export interface FlowTask<P = unknown, R = unknown> {
  type: string;
  payload?: P;
  /** Higher runs first (-1000..1000). */
  priority?: number;
  maxAttempts?: number;
  /** Whole seconds a run may take, at most the type's timeout. */
  timeoutSeconds?: number;
  group?: string;
  /** The result type of the task's definition (types only: nothing at run time). */
  readonly [taskTypes]?: { payload: P; result: R };
}

/** A child task: a task of the flow without children of its own. */
export interface FlowChildTask<P = unknown, R = unknown> extends FlowTask<P, R> {
  /** Its FAILED or CANCELLED end does not fail its parent. */
  optional?: boolean;
}

/** A child that is a flow of its own: its task waits for its children (a child with `task` is a flow). */
export interface FlowChildFlow {
  task: FlowChildTask;
  children: FlowChild[];
}

export type FlowChild = FlowChildTask | FlowChildFlow;

/**
 * A flow, the body of POST /flows: a root task and its children, each a task or a flow of its own (at
 * most 4 levels of children and 1,000 tasks below the root). The root waits in WAITING_CHILDREN
 * until every child has ended, then runs; its handler reads them in `ctx.children`.
 */
export interface Flow<P = unknown, R = unknown> {
  task: FlowTask<P, R>;
  children: FlowChild[];
  /**
   * Sent again with this key and the same flow, the first flow is answered (its ids the same), not
   * made twice (per caller). Without one the HTTP client makes one per call, as for `enqueue`.
   */
  idempotencyKey?: string;
}

/** The ids of a flow's tasks, shaped as the flow was sent. */
export interface FlowIds {
  id: string;
  /** Absent for a task without children. */
  children?: FlowIds[];
}

export interface EnqueueFlowResult<P = unknown, R = unknown> {
  /** The root task's id. */
  id: TaskId<P, R>;
  ids: FlowIds;
  /** The root task (WAITING_CHILDREN until its children have ended). */
  task: ClientTask<P, R>;
  /** False when the idempotency key matched an earlier send of this flow, whose tasks these are. */
  created: boolean;
}

export interface ListFilter {
  status?: TaskStatus;
  type?: string;
  /** Tasks per page fetched (1..100, default 100); the iterator fetches pages as it goes. */
  pageSize?: number;
}

export interface WaitOptions {
  signal?: AbortSignal;
  /** Milliseconds to wait in all before rejecting with WaitTimeoutError (default: no limit). */
  timeout?: number;
  /** Milliseconds between reads at first; it grows to 5 s (default 250). */
  interval?: number;
}

export interface ScheduleInput {
  /** rate(5 minutes), cron(0 9 * * ? *) or at(2026-12-24T18:00:00). */
  expression: string;
  /** IANA time zone of the expression (default UTC). */
  timezone?: string;
  task: { type: string; payload?: unknown; priority?: number; maxAttempts?: number };
  enabled?: boolean;
}

export interface ScheduleClient {
  /** Creates or replaces the schedule `name`. */
  put(name: string, schedule: ScheduleInput): Promise<{ schedule: ScheduleJson; created: boolean }>;
  get(name: string): Promise<ScheduleJson>;
  /** Every schedule of the caller, fetching pages as it goes. */
  list(options?: { pageSize?: number }): AsyncIterable<ScheduleJson>;
  delete(name: string): Promise<void>;
  /** Its recent fires, newest first, and the ticks it missed. */
  fires(name: string, options?: { limit?: number }): Promise<{ fires: FireJson[]; missed: string[] }>;
}

/** Task types: their counts, and an operator's pause and resume (the API's operator grant in AWS). */
export interface TypeClient {
  /** Each task type: paused or not, with its waiting, running and delayed tasks (every owner's). */
  list(): Promise<TypesJson>;
  /** Stops claims of the type (within `takesEffectWithinMs`); its tasks are enqueued and wait. */
  pause(type: string): Promise<TypeControlAnswerJson>;
  resume(type: string): Promise<TypeControlAnswerJson>;
}

/** Task calls, the same over HTTP and direct. */
export interface TaskClient {
  enqueue<S extends z.ZodType, R>(
    definition: TaskDefinition<S, R>,
    payload: z.input<S>,
    options?: EnqueueOptions,
  ): Promise<EnqueueResult<z.input<S>, Awaited<R>>>;
  enqueue(type: string, payload?: unknown, options?: EnqueueOptions): Promise<EnqueueResult>;
  /** Enqueues tasks in batches of up to 100 (an iterable or async iterable of any length). */
  enqueueMany(
    tasks: Iterable<BatchTask> | AsyncIterable<BatchTask>,
    options?: EnqueueManyOptions,
  ): Promise<EnqueueManyResult>;
  /**
   * Enqueues a flow (POST /flows): every task of it checked before any is written, so a refused one
   * (its path named, e.g. `children.3.task.payload.n`) leaves nothing behind.
   */
  enqueueFlow<P, R>(flow: Flow<P, R>): Promise<EnqueueFlowResult<P, R>>;
  get<P, R>(id: TaskId<P, R>): Promise<ClientTask<P, R>>;
  /** Every task of the caller matching the filter, newest first, fetching pages as it goes. */
  list(filter?: ListFilter): AsyncIterable<ClientTask>;
  cancel<P, R>(id: TaskId<P, R>): Promise<ClientTask<P, R>>;
  /** Runs a FAILED or CANCELLED task again (redrive). */
  retry<P, R>(id: TaskId<P, R>): Promise<ClientTask<P, R>>;
  /** Resolves with the task once it is SUCCESS, FAILED or CANCELLED. */
  waitFor<P, R>(id: TaskId<P, R>, options?: WaitOptions): Promise<FinishedTask<P, R>>;
}

export interface LeaseholdClient extends TaskClient {
  schedules: ScheduleClient;
  types: TypeClient;
}
