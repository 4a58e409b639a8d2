/**
 * `leasehold`: runs the local stack (`serve`), a standalone dynalite (`dynamodb`), the web dashboard for
 * a deployed API (`dashboard`), and talks to the HTTP API (`enqueue`, `flow`, `get`, `list`, `cancel`,
 * `retry`, `stats`, `watch`) through the client
 * (leasehold/client: signing, retries, typed errors). Output is for people; `--json` prints JSON for
 * scripts. API errors print their message and exit non-zero.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { access, mkdir } from 'node:fs/promises';
import { ConfigError } from '../../shared/errors.js';
// The local stack and dynalite load only for `serve` and `dynamodb`: the commands that call a
// deployed API do not load the embedded database.
import type { Roles } from '../local/stack.js';
import type { ClientOptions } from '../../shared/client/http-client.js';
import type { LeaseholdClient } from '../../shared/client/client-types.js';
import {
  ApiProblemError,
  ClientOptionsError,
  UnexpectedAnswerError,
  UnreachableError,
  WaitTimeoutError,
} from '../../shared/client/errors.js';
import type { TaskStatus } from '../../shared/task-model.js';
import { cliClient } from './cli-client.js';
import { enqueueFile, fileSummaryText } from './enqueue-file.js';
import { flowIdsText, flowTaskCount, readFlowFile } from './flow-file.js';
import { fileProgressReporter } from './file-progress.js';
import { computeStats, statsText, taskDetails, taskTable, watchScreen } from './format.js';
import { typeControlText, typesTable } from './type-format.js';
import { UsageError } from './usage-error.js';
import { loadTaskModule } from './task-module.js';

const USAGE = `Usage: leasehold <command> [options]

  serve [--api] [--worker] [--recovery] [--tasks FILE]
                                           run the local stack (all three roles unless some are named),
                                           with the task types FILE exports (default: the demo types)
  dynamodb [--port N] [--data-dir DIR]     run a standalone dynalite that several stacks can share
  sim [--data-dir DIR] [-c leasehold:<setting>=V]  run what \`cdk deploy\` creates, locally (see the README)
  enqueue <type> [payload-json] [--priority N] [--delay SECONDS] [--key KEY] [--group GROUP] [--max-attempts N]
                [--debounce KEY --window MS]    collapse enqueues of KEY within MS into one task (the last payload)
  enqueue --file FILE.jsonl [--concurrency N]
                                           one task per line, each line the JSON body of POST /tasks:
                                           {"type":"demo.echo","payload":{"n":1},"priority":5,
                                            "delaySeconds":60,"idempotencyKey":"order-17"}; streamed in
                                           batches of 100 (N in flight, default 2), progress on stderr,
                                           then the counts and each failed line; exits 1 if any failed
  flow <FILE.json> [--key KEY]             enqueue a flow: FILE is the JSON body of POST /flows,
                                           {"task":{"type":"demo.sum"},"children":[{"type":"demo.echo",
                                            "payload":{"n":1}},{"task":{...},"children":[...]}]}
                                           (--key: its idempotency key); prints each task's id
                                           under its parent's
  get <id>
  list [--status STATUS] [--type TYPE] [--limit N]   newest first, N tasks (default 100) across pages
  cancel <id>
  retry <id>
  stats                                    counts by type and status, running leases, oldest queued age
  types                                    each task type: paused or not, waiting, running, delayed
  pause <type>                             stop claims of a type: its tasks wait, running ones finish
  resume <type>                            claim a paused type's tasks again (pause and resume are an
                                           operator's routes: in AWS they need the construct's grantOperate)
  watch [--interval MS] [--count N]        a live view of counts and running tasks
  dashboard --url URL [--port N] [--region R]
                                           the web dashboard for that API on http://127.0.0.1:N/
                                           (default 3001); its calls are signed as the commands'
                                           are (--region: sign for it whatever the URL); the local
                                           stack serves its own at http://127.0.0.1:3000/

Options for the API commands:
  --url URL       the API (default http://127.0.0.1:$LEASEHOLD_PORT, port 3000); an
                  https://<id>.execute-api.<region>.amazonaws.com URL is called with SigV4,
                  signed with your AWS credentials (environment, profile, SSO or role); the
                  sim's API URL is signed with the keys of a sim caller (--as NAME, default admin)
  --owner OWNER   sent as X-Leasehold-Owner (local stack only; default "local")
  --json          print JSON for scripts
  Throttled (429, 503) and lost answers are sent again with backoff; an enqueue carries an
  idempotency key (yours with --key, or one made per call), so a resend cannot enqueue it twice.`;

/** What `list` shows without --limit, and the most one page of the API holds. */
const DEFAULT_LIST_LIMIT = 100;
const MAX_PAGE_SIZE = 100;
/** The tasks `stats` and `watch` read at most (newest first). */
const MAX_SCANNED_TASKS = 5_000;

const options = {
  api: { type: 'boolean' },
  worker: { type: 'boolean' },
  recovery: { type: 'boolean' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  url: { type: 'string' },
  region: { type: 'string' },
  owner: { type: 'string' },
  as: { type: 'string' },
  json: { type: 'boolean' },
  priority: { type: 'string' },
  delay: { type: 'string' },
  key: { type: 'string' },
  group: { type: 'string' },
  debounce: { type: 'string' },
  window: { type: 'string' },
  'max-attempts': { type: 'string' },
  file: { type: 'string' },
  concurrency: { type: 'string' },
  status: { type: 'string' },
  type: { type: 'string' },
  limit: { type: 'string' },
  interval: { type: 'string' },
  count: { type: 'string' },
  tasks: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

export async function main(
  argv: string[],
  env: Record<string, string | undefined>,
  out = process.stdout,
  /** Tests' injections into the API commands' client (fetch, retry delays); none in use. */
  clientOverrides: Partial<ClientOptions> = {},
): Promise<number> {
  const print = (text: string) => out.write(`${text}\n`);
  // The sim is development tooling with options of its own: loaded only when asked for.
  if (argv[0] === 'sim') return (await import('../sim/cli.js')).simMain(argv.slice(1));
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { values: flags, positionals } = parsed;
  const [command, ...args] = positionals;
  if (!command || flags.help) {
    print(USAGE);
    return command || flags.help ? 0 : 2;
  }
  try {
    switch (command) {
      case 'serve':
        return await serve(flags, env, print);
      case 'dynamodb':
        return await dynamodb(flags, env, print);
      case 'dashboard':
        return await dashboard(flags, env, print);
      default:
        return await apiCommand(command, args, flags, env, print, clientOverrides);
    }
  } catch (error) {
    if (error instanceof ApiProblemError) {
      process.stderr.write(
        `error ${error.status}: ${error.message}\n${error.errors.map((e) => `  ${e.field}: ${e.message}\n`).join('')}`,
      );
      return 1;
    }
    if (
      error instanceof UnreachableError ||
      error instanceof UnexpectedAnswerError ||
      error instanceof ClientOptionsError ||
      error instanceof WaitTimeoutError ||
      error instanceof ConfigError
    ) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw error;
  }
}

async function serve(
  flags: Flags,
  env: Record<string, string | undefined>,
  print: (t: string) => void,
): Promise<number> {
  const any = flags.api || flags.worker || flags.recovery;
  const roles: Roles = {
    api: !any || !!flags.api,
    worker: !any || !!flags.worker,
    recovery: !any || !!flags.recovery,
  };
  const { banner, startStack } = await import('../local/stack.js');
  const definitions = flags.tasks ? await loadTaskModule(flags.tasks, process.cwd()) : undefined;
  const stack = await startStack({ env, roles, ...(definitions ? { definitions } : {}) });
  for (const line of banner(stack, roles, stack.app.config.dataDir)) print(line);
  await new Promise<void>((resolveStop) => {
    const stop = (signal: string) => {
      print(`${signal}: draining (at most ${stack.app.config.drainMarginMs / 1000} s), releasing leases`);
      void stack.stop().then(() => {
        print('stopped');
        resolveStop();
      });
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  return 0;
}

async function dynamodb(
  flags: Flags,
  env: Record<string, string | undefined>,
  print: (t: string) => void,
): Promise<number> {
  const dir = flags['data-dir'] ?? env.LEASEHOLD_DATA_DIR;
  if (dir) await mkdir(resolve(dir), { recursive: true });
  const { startDynalite } = await import('../local/dynalite.js');
  const server = await startDynalite({
    port: intFlag(flags.port, 'port') ?? 0,
    ...(dir ? { path: resolve(dir) } : {}),
  });
  print(`dynalite listening on ${server.endpoint}${dir ? ` (data in ${resolve(dir)})` : ' (in memory)'}`);
  print(`share it: LEASEHOLD_DYNAMODB_ENDPOINT=${server.endpoint} npm start`);
  await new Promise<void>((done) => {
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  await server.close();
  return 0;
}

async function dashboard(
  flags: Flags,
  env: Record<string, string | undefined>,
  print: (t: string) => void,
): Promise<number> {
  const { runDashboard } = await import('./dashboard-command.js');
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  return await runDashboard(flags, env, print, stop.signal);
}

async function apiCommand(
  command: string,
  args: string[],
  flags: Flags,
  env: Record<string, string | undefined>,
  print: (t: string) => void,
  clientOverrides: Partial<ClientOptions>,
): Promise<number> {
  const url = flags.url ?? `http://127.0.0.1:${env.LEASEHOLD_PORT || '3000'}`;
  if (!URL.canParse(url))
    throw new UsageError(`--url must be a URL such as http://127.0.0.1:3000 (got ${url})`);
  const { client, local } = cliClient(url, flags, env, clientOverrides);
  try {
    return await runApiCommand(client, url, command, args, flags, print);
  } catch (error) {
    if (error instanceof UnreachableError && local)
      throw new UnreachableError(`${error.message}; is \`npm start\` running?`, { cause: error });
    throw error;
  }
}

async function runApiCommand(
  client: LeaseholdClient,
  url: string,
  command: string,
  args: string[],
  flags: Flags,
  print: (t: string) => void,
): Promise<number> {
  const show = (value: unknown, human: () => string) =>
    print(flags.json ? JSON.stringify(value, null, 2) : human());
  switch (command) {
    case 'enqueue': {
      if (flags.file !== undefined) {
        if (args.length > 0)
          throw new UsageError('enqueue --file takes the tasks from the file: give no type');
        return await enqueueFromFile(client, flags, show);
      }
      const [type, payloadText] = args;
      if (!type) throw new UsageError('enqueue needs a task type (or --file FILE.jsonl)');
      let payload: unknown;
      if (payloadText !== undefined) {
        try {
          payload = JSON.parse(payloadText);
        } catch {
          throw new UsageError(`the payload must be JSON, e.g. '{"ms": 1000}' (got ${payloadText})`);
        }
      }
      const delaySeconds = intFlag(flags.delay, 'delay');
      const windowMs = intFlag(flags.window, 'window');
      if ((flags.debounce === undefined) !== (windowMs === undefined))
        throw new UsageError('give --debounce KEY and --window MS together');
      const { task, created, joined } = await client.enqueue(type, payload, {
        ...(flags.debounce !== undefined && windowMs !== undefined
          ? { debounce: { key: flags.debounce, windowMs } }
          : {}),
        ...definedOnly({
          priority: intFlag(flags.priority, 'priority'),
          delay: delaySeconds === undefined ? undefined : delaySeconds * 1000,
          maxAttempts: intFlag(flags['max-attempts'], 'max-attempts'),
          idempotencyKey: flags.key,
          group: flags.group,
        }),
      });
      show(
        { task, created, ...(joined ? { joined } : {}) },
        () =>
          `${created ? 'queued' : joined ? 'joined the waiting task of its debounce key' : 'already queued (same idempotency key)'} ${task.id} (${task.type}, ${task.status})`,
      );
      return 0;
    }
    case 'flow': {
      const path = args[0] ?? flags.file;
      if (path === undefined || args.length > 1 || (args[0] !== undefined && flags.file !== undefined))
        throw new UsageError('flow needs one file: the JSON body of POST /flows (flow FILE.json)');
      const flow = await readFlowFile(path);
      const answer = await client.enqueueFlow(
        flags.key === undefined ? flow : { ...flow, idempotencyKey: flags.key },
      );
      show(answer, () => {
        const head = answer.created ? 'queued flow' : 'already queued (same idempotency key) flow';
        return `${head} ${answer.id} (${flowTaskCount(answer.ids)} tasks, root ${answer.task.status})\n${flowIdsText(flow, answer.ids)}`;
      });
      return 0;
    }
    case 'get': {
      const task = await client.get(needId(args));
      show({ task }, () => taskDetails(task));
      return 0;
    }
    case 'list': {
      const limit = intFlag(flags.limit, 'limit') ?? DEFAULT_LIST_LIMIT;
      // One more than asked for, to tell whether there are more.
      const tasks = await firstOf(
        client.list({
          ...definedOnly({ status: flags.status as TaskStatus | undefined, type: flags.type }),
          pageSize: Math.min(limit, MAX_PAGE_SIZE),
        }),
        limit + 1,
      );
      const more = tasks.length > limit;
      const shown = tasks.slice(0, limit);
      show(
        { tasks: shown, ...(more ? { more: true } : {}) },
        () => taskTable(shown) + (more ? '\n(more: narrow with --status/--type or raise --limit)' : ''),
      );
      return 0;
    }
    case 'cancel':
    case 'retry': {
      const id = needId(args);
      const task = command === 'cancel' ? await client.cancel(id) : await client.retry(id);
      show({ task }, () => `${task.id} ${task.status}`);
      return 0;
    }
    case 'stats': {
      const stats = computeStats(await firstOf(client.list(), MAX_SCANNED_TASKS), Date.now());
      show(stats, () => statsText(stats));
      return 0;
    }
    case 'types': {
      const types = await client.types.list();
      show(types, () => typesTable(types));
      return 0;
    }
    case 'pause':
    case 'resume': {
      if (!args[0]) throw new UsageError(`give the task type to ${command}`);
      const answer =
        command === 'pause' ? await client.types.pause(args[0]) : await client.types.resume(args[0]);
      show(answer, () => typeControlText(answer));
      return 0;
    }
    case 'watch': {
      const interval = intFlag(flags.interval, 'interval') ?? 1000;
      const count = intFlag(flags.count, 'count') ?? Number.POSITIVE_INFINITY;
      const tty = process.stdout.isTTY;
      for (let i = 0; i < count; i++) {
        const screen = watchScreen(await firstOf(client.list(), MAX_SCANNED_TASKS), Date.now(), url);
        print(`${tty ? '\x1b[2J\x1b[H' : i > 0 ? '\n' : ''}${screen}`);
        if (i + 1 < count) await new Promise((r) => setTimeout(r, interval));
      }
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

async function enqueueFromFile(
  client: LeaseholdClient,
  flags: Flags,
  show: (value: unknown, human: () => string) => void,
): Promise<number> {
  const path = flags.file!;
  try {
    await access(path);
  } catch (error) {
    throw new UsageError(`cannot read ${path} (${(error as Error).message})`);
  }
  const progress = fileProgressReporter(process.stderr);
  const concurrency = intFlag(flags.concurrency, 'concurrency');
  let summary;
  try {
    summary = await enqueueFile(client, path, {
      onProgress: (p) => progress.update(p),
      ...(concurrency === undefined ? {} : { concurrency }),
    });
  } finally {
    progress.finish();
  }
  show(summary, () => fileSummaryText(summary));
  return summary.failed > 0 ? 1 : 0;
}

/** The first `n` items of an async iterable (the client's lists fetch pages only as they are read). */
async function firstOf<T>(items: AsyncIterable<T>, n: number): Promise<T[]> {
  const taken: T[] = [];
  if (n <= 0) return taken;
  for await (const item of items) if (taken.push(item) >= n) break;
  return taken;
}

/** The object without its undefined members. */
function definedOnly<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function needId(args: string[]): string {
  if (!args[0]) throw new UsageError('give the task id');
  return args[0];
}

function intFlag(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number (got ${value})`);
  return Number(value);
}
