/**
 * One Lambda execution environment: a Node process running the function's bundle through the sim's
 * runtime client (bootstrap.cjs), talking to a Runtime API served here. As on Lambda it is frozen
 * (SIGSTOP) whenever its runtime waits for the next event, thawed (SIGCONT) for an invocation, so a
 * timer left armed fires inside a later invocation; it is killed at the function's timeout and after
 * a crash, and the next invocation starts a fresh one (a cold start). Its process gets the CPU share
 * of its memory (cpu-limiter.ts), init included, and a cold start's REPORT line has its Init Duration.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { cpuLimitFor, type CpuLimit } from './cpu-limiter.js';
import { lambdaNodeFlags } from './node-runtime.js';

const BOOTSTRAP = fileURLToPath(new URL('./bootstrap.cjs', import.meta.url));

/** Lambda's limit on a synchronous response (6 MB + 100 bytes of envelope, as the Runtime API enforces). */
export const MAX_RESPONSE_BYTES = 6 * 1024 * 1024 + 100;
/** Lambda's limit on the init phase. */
const INIT_TIMEOUT_MS = 10_000;

export interface EnvironmentSpec {
  functionName: string;
  functionArn: string;
  handler: string;
  taskRoot: string;
  timeoutMs: number;
  memoryMb: number;
  nodePath: string;
  /** The function's environment, Lambda's own variables included (credentials, region, log names). */
  environment: Record<string, string>;
  /** Where the environment's stdout and stderr go (the function's log group). */
  log: (line: string) => void;
  /** Limit the process to the CPU share of its memory (default true). */
  cpuLimit?: boolean;
}

export interface InvocationResult {
  requestId: string;
  /** The handler's JSON answer, or the error body. */
  payload: string;
  /** 'Unhandled' when the function failed (error, timeout, crash), as Invoke's X-Amz-Function-Error. */
  functionError?: 'Unhandled';
  errorType?: string;
  durationMs: number;
  coldStart: boolean;
  /** A cold start's init phase (process start to the runtime's first request for an event). */
  initDurationMs?: number;
}

interface Pending {
  requestId: string;
  payload: string;
  deadline: number;
  startedAt: number;
  coldStart: boolean;
  resolve: (r: InvocationResult) => void;
  timer: NodeJS.Timeout;
}

export type EnvironmentState = 'initializing' | 'idle' | 'busy' | 'dead';

export class ExecutionEnvironment {
  state: EnvironmentState = 'initializing';
  readonly id = randomUUID().replace(/-/g, '');
  lastUsedAt = Date.now();
  invocations = 0;
  private child: ChildProcess | undefined;
  private server: Server | undefined;
  private waitingNext: ServerResponse | undefined;
  private current: Pending | undefined;
  private initError: string | undefined;
  private readyWaiters: ((ok: boolean) => void)[] = [];
  private rssTimer: NodeJS.Timeout | undefined;
  private cpu: CpuLimit | undefined;
  private initDurationMs: number | undefined;

  constructor(private readonly spec: EnvironmentSpec) {}

  /** Starts the process and waits until its runtime asks for the first event (init done). */
  async start(): Promise<void> {
    this.server = createServer((req, res) => this.route(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    const { port } = this.server.address() as AddressInfo;
    // The variables Lambda sets from the function's configuration and for this environment.
    const env = {
      ...this.spec.environment,
      _HANDLER: this.spec.handler,
      LAMBDA_TASK_ROOT: this.spec.taskRoot,
      AWS_LAMBDA_FUNCTION_NAME: this.spec.functionName,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(this.spec.memoryMb),
      AWS_LAMBDA_RUNTIME_API: `127.0.0.1:${port}`,
      AWS_LAMBDA_LOG_STREAM_NAME: `${new Date().toISOString().slice(0, 10).replace(/-/g, '/')}/[$LATEST]${this.id}`,
    };
    this.cpu = cpuLimitFor(this.id, this.spec.memoryMb, this.spec.cpuLimit ?? true);
    const command = this.cpu.wrap(this.spec.nodePath, [...lambdaNodeFlags(this.spec.memoryMb), BOOTSTRAP]);
    const spawnedAt = performance.now();
    this.child = spawn(command.command, command.args, {
      cwd: this.spec.taskRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (this.child.pid) this.cpu.attach(this.child.pid);
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      let rest = '';
      stream.on('data', (d: Buffer) => {
        const lines = (rest + d.toString()).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) this.spec.log(line);
      });
    }
    this.child.on('exit', (code, signal) => this.onExit(code, signal));
    const ok = await Promise.race([
      new Promise<boolean>((r) => this.readyWaiters.push(r)),
      new Promise<boolean>((r) => setTimeout(() => r(false), INIT_TIMEOUT_MS).unref()),
    ]);
    this.initDurationMs = performance.now() - spawnedAt;
    if (!ok) {
      this.kill();
      throw new Error(
        this.initError ?? `init of ${this.spec.functionName} did not finish within ${INIT_TIMEOUT_MS} ms`,
      );
    }
  }

  /** Runs one invocation; resolves with its result (never rejects: failures are results, as Invoke reports them). */
  invoke(payload: string, traceId?: string): Promise<InvocationResult> {
    if (this.state !== 'idle' || !this.waitingNext)
      throw new Error(`environment ${this.id} is ${this.state}`);
    const coldStart = this.invocations === 0;
    this.invocations++;
    this.state = 'busy';
    const requestId = randomUUID();
    const startedAt = Date.now();
    const deadline = startedAt + this.spec.timeoutMs;
    this.spec.log(`START RequestId: ${requestId} Version: $LATEST`);
    return new Promise<InvocationResult>((resolve) => {
      const timer = setTimeout(() => this.timeOut(), this.spec.timeoutMs);
      this.current = {
        requestId,
        payload,
        deadline,
        startedAt,
        coldStart,
        resolve: (r) =>
          resolve({
            ...r,
            coldStart,
            ...(coldStart && this.initDurationMs !== undefined
              ? { initDurationMs: this.initDurationMs }
              : {}),
          }),
        timer,
      };
      this.thaw();
      const next = this.waitingNext!;
      this.waitingNext = undefined;
      next.writeHead(200, {
        'content-type': 'application/json',
        'lambda-runtime-aws-request-id': requestId,
        'lambda-runtime-deadline-ms': String(deadline),
        'lambda-runtime-invoked-function-arn': this.spec.functionArn,
        'lambda-runtime-trace-id':
          traceId ??
          `Root=1-${Math.floor(startedAt / 1000).toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)};Sampled=0`,
      });
      next.end(payload);
      this.watchMemory();
    });
  }

  /** Ends the environment (idle reaping, sim shutdown). */
  kill(): void {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
    }
    // An invocation still running (the sim shuts down) ends as Lambda reports a runtime that went away,
    // and its timeout timer goes with it: left armed, it kept the sim's process alive for the
    // function's whole timeout. A timeout or an out-of-memory kill reports its own error first.
    if (this.current && this.state !== 'dead')
      this.finish({
        payload: JSON.stringify({
          errorType: 'Runtime.ExitError',
          errorMessage: `RequestId: ${this.current.requestId} Error: Runtime exited with error: signal: sigkill`,
        }),
        functionError: 'Unhandled',
        errorType: 'Runtime.ExitError',
      });
    this.state = 'dead';
    this.server?.close();
    this.server?.closeAllConnections();
    if (this.rssTimer) clearInterval(this.rssTimer);
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private freeze(): void {
    // The duty cycle (where there is no cgroup) stops first, so it never thaws a frozen environment.
    this.cpu?.setRunning(false);
    if (this.child?.pid && this.child.exitCode === null) process.kill(this.child.pid, 'SIGSTOP');
  }

  private thaw(): void {
    this.cpu?.setRunning(true);
    if (this.child?.pid && this.child.exitCode === null) process.kill(this.child.pid, 'SIGCONT');
  }

  private finish(result: Omit<InvocationResult, 'coldStart' | 'requestId' | 'durationMs'>): void {
    const current = this.current;
    if (!current) return;
    this.current = undefined;
    clearTimeout(current.timer);
    if (this.rssTimer) clearInterval(this.rssTimer);
    const durationMs = Date.now() - current.startedAt;
    this.spec.log(`END RequestId: ${current.requestId}`);
    this.spec.log(
      `REPORT RequestId: ${current.requestId}\tDuration: ${durationMs.toFixed(2)} ms\tMemory Size: ${this.spec.memoryMb} MB${current.coldStart && this.initDurationMs !== undefined ? `\tInit Duration: ${this.initDurationMs.toFixed(2)} ms` : ''}${result.errorType ? `\tStatus: ${result.errorType}` : ''}`,
    );
    this.lastUsedAt = Date.now();
    current.resolve({ requestId: current.requestId, durationMs, coldStart: false, ...result });
  }

  private timeOut(): void {
    const current = this.current;
    if (!current) return;
    const seconds = (this.spec.timeoutMs / 1000).toFixed(2);
    this.spec.log(`${new Date().toISOString()} ${current.requestId} Task timed out after ${seconds} seconds`);
    this.finish({
      payload: JSON.stringify({
        errorType: 'Sandbox.Timedout',
        errorMessage: `RequestId: ${current.requestId} Error: Task timed out after ${seconds} seconds`,
      }),
      functionError: 'Unhandled',
      errorType: 'Sandbox.Timedout',
    });
    // Lambda resets an environment that timed out: the process and every timer in it are gone.
    this.kill();
  }

  /** Lambda stops a function that uses more memory than it was given. */
  private watchMemory(): void {
    const pid = this.child?.pid;
    if (!pid || process.platform !== 'linux') return;
    this.rssTimer = setInterval(() => {
      let kb = 0;
      try {
        kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      } catch {
        return; // the process just ended
      }
      if (kb > this.spec.memoryMb * 1024 && this.current) {
        this.spec.log(
          `RequestId: ${this.current.requestId} Error: Runtime exited with error: signal: killed (memory ${Math.round(kb / 1024)} MB over ${this.spec.memoryMb} MB)`,
        );
        this.finish({
          payload: JSON.stringify({
            errorType: 'Runtime.OutOfMemory',
            errorMessage: 'Runtime exited with error: signal: killed',
          }),
          functionError: 'Unhandled',
          errorType: 'Runtime.OutOfMemory',
        });
        this.kill();
      }
    }, 250);
    this.rssTimer.unref();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.cpu?.release();
    const wasDead = this.state === 'dead';
    this.state = 'dead';
    this.server?.close();
    this.server?.closeAllConnections();
    for (const w of this.readyWaiters.splice(0)) w(false);
    if (!wasDead && this.current) {
      const how = signal ? `signal: ${signal.toLowerCase()}` : `exit status ${code}`;
      this.finish({
        payload: JSON.stringify({
          errorType: 'Runtime.ExitError',
          errorMessage: `RequestId: ${this.current.requestId} Error: Runtime exited with error: ${how}`,
        }),
        functionError: 'Unhandled',
        errorType: 'Runtime.ExitError',
      });
    }
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '';
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'GET' && url.endsWith('/runtime/invocation/next')) {
        this.waitingNext = res;
        if (this.state === 'initializing') for (const w of this.readyWaiters.splice(0)) w(true);
        if (this.state !== 'dead') this.state = 'idle';
        // Lambda freezes the environment once its runtime waits for the next event.
        this.freeze();
        return;
      }
      if (url.endsWith('/runtime/init/error')) {
        this.initError = body.toString('utf8');
        res.writeHead(202).end('{"status":"OK"}');
        return;
      }
      const m = /\/runtime\/invocation\/([^/]+)\/(response|error)$/.exec(url);
      if (!m || m[1] !== this.current?.requestId) {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end('{"errorMessage":"Invalid request ID","errorType":"InvalidRequestID"}');
        return;
      }
      if (m[2] === 'response' && body.length > MAX_RESPONSE_BYTES) {
        res
          .writeHead(413, { 'content-type': 'application/json' })
          .end(
            `{"errorMessage":"Exceeded maximum allowed payload size (${MAX_RESPONSE_BYTES} bytes).","errorType":"RequestEntityTooLarge"}`,
          );
        this.finish({
          payload: JSON.stringify({
            errorType: 'Function.ResponseSizeTooLarge',
            errorMessage: `Response payload size exceeded maximum allowed payload size (${MAX_RESPONSE_BYTES} bytes).`,
          }),
          functionError: 'Unhandled',
          errorType: 'Function.ResponseSizeTooLarge',
        });
        return;
      }
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"OK"}');
      if (m[2] === 'response') this.finish({ payload: body.toString('utf8') });
      else {
        const errorType =
          (JSON.parse(body.toString('utf8') || '{}') as { errorType?: string }).errorType ?? 'Unhandled';
        this.finish({ payload: body.toString('utf8'), functionError: 'Unhandled', errorType });
      }
    });
  }
}
