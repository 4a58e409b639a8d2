/**
 * The Lambda service for the sim's functions: invocations checked against IAM (the caller's identity
 * policy, or the function's resource policy for a service such as API Gateway), run in warm execution
 * environments when one is idle or a new one (a cold start) while the function's reserved concurrency
 * and the account's concurrency allow, throttled beyond that; asynchronous invocations go through an
 * internal queue with the function's EventInvokeConfig (or Lambda's defaults). Each invocation is a hop
 * of the chain its trace header names (trace-lineage.ts): past the recursion limit it is stopped unless
 * the function's RecursiveLoop is Allow, and counted as RecursiveInvocationsDropped.
 */
import { randomUUID } from 'node:crypto';
import type { AccessLog } from '../iam/access-log.js';
import type { IdentityStore } from '../iam/identity-store.js';
import { wildcardMatch } from '../iam/policy-evaluator.js';
import { AsyncInvokeQueue, type AsyncInvokeConfig, type DestinationSender } from './async-invoke-queue.js';
import { ExecutionEnvironment, type InvocationResult } from './execution-environment.js';
import { LambdaError } from './lambda-error.js';
import {
  RECURSION_LIMIT,
  RECURSION_MESSAGE,
  isStopped,
  lineageOf,
  nextHop,
  runtimeTraceId,
  type Lineage,
  type RecursiveLoop,
} from './trace-lineage.js';

export { LambdaError };

export interface FunctionDefinition {
  logicalId: string;
  name: string;
  arn: string;
  handler: string;
  runtime: string;
  taskRoot: string;
  timeoutMs: number;
  memoryMb: number;
  reservedConcurrency: number | undefined;
  roleArn: string;
  nodePath: string;
  /** The template's environment, resolved, plus Lambda's own variables except credentials. */
  environment: Record<string, string>;
  asyncConfig: AsyncInvokeConfig;
  /** The template's RecursiveLoop (Lambda's default: Terminate). */
  recursiveLoop?: RecursiveLoop;
  /** AWS::Lambda::Permission statements: which service may invoke it, from which source. */
  resourcePolicy: { principal: string; sourceArn?: string; action: string }[];
  log: (line: string) => void;
}

export type Caller = { principalArn: string } | { service: string; sourceArn: string };

export interface FunctionStats {
  invocations: number;
  coldStarts: number;
  throttles: number;
  errors: Record<string, number>;
  /** The function's CloudWatch metrics the sim counts (AWS/Lambda namespace names). */
  metrics: { RecursiveInvocationsDropped: number };
  /** The most hops of one chain an invocation that ran was (its trace lineage; 0 before any ran). */
  deepestChain: number;
  /** Billed duration of every invocation so far, init phases included (Lambda bills both, by the ms). */
  billedMs: number;
  /** The function's memory, which prices its GB-seconds. */
  memoryMb: number;
  environments: { id: string; state: string; pid: number | undefined; invocations: number }[];
  recent: {
    requestId: string;
    startedAt: number;
    durationMs: number;
    coldStart: boolean;
    /** A cold start's init phase, as the REPORT line's Init Duration. */
    initDurationMs?: number;
    errorType?: string;
    environment: string;
  }[];
}

interface FunctionState {
  def: FunctionDefinition;
  environments: ExecutionEnvironment[];
  starting: number;
  stats: Omit<FunctionStats, 'environments'>;
  queue: AsyncInvokeQueue;
}

export interface LambdaServiceOptions {
  functions: FunctionDefinition[];
  identities: IdentityStore;
  log: AccessLog;
  /** The account's concurrency quota (Lambda's default is 1,000; young accounts have 10 or 50). */
  accountConcurrency: number;
  /** Idle environments are stopped after this long (Lambda keeps them for minutes, unpredictably). */
  idleEnvironmentTtlMs: number;
  destinations: DestinationSender;
  /** Invocations of one chain that run before the next is stopped (Lambda: 16). */
  recursionLimit?: number;
  /** Give each environment the CPU share of its memory (default true; false: the host's CPUs, unlimited). */
  cpuLimit?: boolean;
}

export class LambdaService {
  private readonly fns = new Map<string, FunctionState>();
  private readonly reaper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: LambdaServiceOptions) {
    for (const def of options.functions) {
      const state: FunctionState = {
        def,
        environments: [],
        starting: 0,
        stats: {
          invocations: 0,
          coldStarts: 0,
          throttles: 0,
          errors: {},
          metrics: { RecursiveInvocationsDropped: 0 },
          deepestChain: 0,
          billedMs: 0,
          memoryMb: def.memoryMb,
          recent: [],
        },
        queue: new AsyncInvokeQueue(
          def.arn,
          def.asyncConfig,
          (payload, lineage) => this.run(state, payload, lineage),
          options.destinations,
          def.log,
        ),
      };
      this.fns.set(def.arn, state);
      this.fns.set(def.name, state);
    }
    this.reaper = setInterval(() => this.reapIdle(), 5_000);
    this.reaper.unref();
  }

  definitions(): FunctionDefinition[] {
    return [...new Set(this.fns.values())].map((s) => s.def);
  }

  /**
   * Invoke with InvocationType RequestResponse: the result, or LambdaError for throttling, access and a
   * stopped recursive loop. `traceHeader` is the caller's X-Amzn-Trace-Id (none: a new chain).
   */
  async invoke(
    functionArnOrName: string,
    payload: string,
    caller: Caller,
    traceHeader?: string,
  ): Promise<InvocationResult> {
    const state = this.authorize(functionArnOrName, caller);
    return this.run(state, payload, lineageOf(traceHeader));
  }

  /** Invoke with InvocationType Event: accepted into the function's async queue (202), run later. */
  invokeAsync(
    functionArnOrName: string,
    payload: string,
    caller: Caller,
    traceHeader?: string,
  ): { requestId: string } {
    const state = this.authorize(functionArnOrName, caller);
    return { requestId: state.queue.enqueue(payload, lineageOf(traceHeader)) };
  }

  stats(): Record<string, FunctionStats & { queued: number }> {
    const out: Record<string, FunctionStats & { queued: number }> = {};
    for (const state of new Set(this.fns.values())) {
      out[state.def.logicalId] = {
        ...state.stats,
        environments: state.environments.map((e) => ({
          id: e.id,
          state: e.state,
          pid: e.pid,
          invocations: e.invocations,
        })),
        queued: state.queue.size,
      };
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    for (const state of new Set(this.fns.values())) {
      state.queue.close();
      for (const e of state.environments) e.kill();
    }
  }

  private authorize(functionArnOrName: string, caller: Caller): FunctionState {
    const state = this.fns.get(functionArnOrName.replace(/:\$LATEST$/, ''));
    if (!state)
      throw new LambdaError('ResourceNotFoundException', 404, `Function not found: ${functionArnOrName}`);
    const arn = state.def.arn;
    let allowed: boolean;
    let principal: string;
    if ('principalArn' in caller) {
      principal = caller.principalArn;
      allowed = this.options.identities.isAllowed(caller.principalArn, 'lambda:InvokeFunction', arn);
    } else {
      principal = caller.service;
      allowed = state.def.resourcePolicy.some(
        (p) =>
          p.principal === caller.service &&
          wildcardMatch(p.action, 'lambda:InvokeFunction', true) &&
          (p.sourceArn === undefined || wildcardMatch(p.sourceArn, caller.sourceArn)),
      );
    }
    this.options.log.add({
      at: Date.now(),
      service: 'lambda',
      principalArn: principal,
      action: 'lambda:InvokeFunction',
      resource: arn,
      allowed,
    });
    if (!allowed)
      throw new LambdaError(
        'AccessDeniedException',
        403,
        `User: ${principal} is not authorized to perform: lambda:InvokeFunction on resource: ${arn}`,
      );
    return state;
  }

  private busyCount(state: FunctionState): number {
    return state.starting + state.environments.filter((e) => e.state === 'busy').length;
  }

  private accountBusy(): number {
    let n = 0;
    for (const state of new Set(this.fns.values())) n += this.busyCount(state);
    return n;
  }

  /** The function's share of the account: its reservation, or what the reservations leave to everyone else. */
  private limitOf(state: FunctionState): number {
    if (state.def.reservedConcurrency !== undefined) return state.def.reservedConcurrency;
    const reserved = [...new Set(this.fns.values())].reduce(
      (sum, s) => sum + (s.def.reservedConcurrency ?? 0),
      0,
    );
    return this.options.accountConcurrency - reserved;
  }

  private async run(
    state: FunctionState,
    payload: string,
    incoming: Lineage | undefined,
  ): Promise<InvocationResult> {
    if (this.closed) throw new LambdaError('TooManyRequestsException', 429, 'the sim is shutting down');
    const lineage = nextHop(incoming, state.def.arn);
    const limit = this.options.recursionLimit ?? RECURSION_LIMIT;
    if (isStopped(lineage, limit, state.def.recursiveLoop)) {
      state.stats.metrics.RecursiveInvocationsDropped++;
      state.def.log(
        `sim: invocation stopped by recursive loop detection (hop ${lineage.hops} of chain ${lineage.hash}, limit ${limit}; RecursiveLoop is not Allow)`,
      );
      throw new LambdaError('RecursiveInvocationException', 400, RECURSION_MESSAGE);
    }
    const idle = state.environments.find((e) => e.state === 'idle');
    if (
      !idle &&
      (this.busyCount(state) >= this.limitOf(state) || this.accountBusy() >= this.options.accountConcurrency)
    ) {
      state.stats.throttles++;
      const reason =
        state.def.reservedConcurrency !== undefined
          ? 'ReservedFunctionConcurrentInvocationLimitExceeded'
          : 'ConcurrentInvocationLimitExceeded';
      state.def.log(`sim: invocation throttled (${reason})`);
      throw new LambdaError('TooManyRequestsException', 429, `Rate Exceeded. (${reason})`);
    }
    const environment = idle ?? (await this.startEnvironment(state));
    state.stats.invocations++;
    state.stats.deepestChain = Math.max(state.stats.deepestChain, lineage.hops);
    const result = await environment.invoke(payload, runtimeTraceId(Date.now(), lineage));
    if (result.coldStart) state.stats.coldStarts++;
    state.stats.billedMs += Math.ceil(result.durationMs) + Math.ceil(result.initDurationMs ?? 0);
    if (result.errorType)
      state.stats.errors[result.errorType] = (state.stats.errors[result.errorType] ?? 0) + 1;
    state.stats.recent.push({
      requestId: result.requestId,
      startedAt: Date.now() - result.durationMs,
      durationMs: result.durationMs,
      coldStart: result.coldStart,
      ...(result.initDurationMs !== undefined ? { initDurationMs: result.initDurationMs } : {}),
      ...(result.errorType ? { errorType: result.errorType } : {}),
      environment: environment.id,
    });
    if (state.stats.recent.length > 500) state.stats.recent.shift();
    state.environments = state.environments.filter((e) => e.state !== 'dead');
    return result;
  }

  private async startEnvironment(state: FunctionState): Promise<ExecutionEnvironment> {
    const { def } = state;
    state.starting++;
    try {
      // Each environment runs as a session of the function's role, with credentials of its own.
      const session = this.options.identities.assumeRole(def.roleArn, def.name);
      const environment = new ExecutionEnvironment({
        functionName: def.name,
        functionArn: def.arn,
        handler: def.handler,
        taskRoot: def.taskRoot,
        timeoutMs: def.timeoutMs,
        memoryMb: def.memoryMb,
        nodePath: def.nodePath,
        environment: {
          ...def.environment,
          AWS_ACCESS_KEY_ID: session.credentials.accessKeyId,
          AWS_SECRET_ACCESS_KEY: session.credentials.secretAccessKey,
          AWS_SESSION_TOKEN: session.credentials.sessionToken ?? '',
          _X_AMZN_TRACE_ID: `Root=1-${randomUUID().slice(0, 8)}`,
        },
        log: def.log,
        cpuLimit: this.options.cpuLimit ?? true,
      });
      await environment.start();
      // The sim closed while this one started: nothing may outlive it (a frozen child keeps its parent alive).
      if (this.closed) {
        environment.kill();
        throw new LambdaError('TooManyRequestsException', 429, 'the sim is shutting down');
      }
      state.environments.push(environment);
      return environment;
    } finally {
      state.starting--;
    }
  }

  private reapIdle(): void {
    const now = Date.now();
    for (const state of new Set(this.fns.values())) {
      for (const e of state.environments)
        if (e.state === 'idle' && now - e.lastUsedAt > this.options.idleEnvironmentTtlMs) e.kill();
      state.environments = state.environments.filter((e) => e.state !== 'dead');
    }
  }
}
