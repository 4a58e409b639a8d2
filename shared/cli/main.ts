/**
 * `leasehold`: runs the local stack (`serve`), a standalone dynalite (`dynamodb`), and talks to the
 * HTTP API (`enqueue`, `get`, `list`, `cancel`, `retry`, `stats`, `watch`). Output is for people;
 * `--json` prints the API's JSON for scripts. API errors print their message and exit non-zero.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { ConfigError } from '../errors.js';
// The local stack and dynalite load only for `serve` and `dynamodb`: the commands that call a
// deployed API do not load the embedded database.
import type { Roles } from '../local/stack.js';
import { ApiClient, ApiError, UnreachableError, type TaskJson } from './api-client.js';
import { regionOfApiUrl, sigv4Signer } from './sigv4.js';
import { simSigner } from './sim-callers.js';
import { computeStats, statsText, taskDetails, taskTable, watchScreen } from './format.js';

const USAGE = `Usage: leasehold <command> [options]

  serve [--api] [--worker] [--recovery]   run the local stack (all three roles unless some are named)
  dynamodb [--port N] [--data-dir DIR]     run a standalone dynalite that several stacks can share
  sim [--data-dir DIR] [-c leasehold:<setting>=V]  run what \`cdk deploy\` creates, locally (see the README)
  enqueue <type> [payload-json] [--priority N] [--delay SECONDS] [--key KEY] [--max-attempts N]
  get <id>
  list [--status STATUS] [--type TYPE] [--limit N]
  cancel <id>
  retry <id>
  stats                                    counts by type and status, running leases, oldest queued age
  watch [--interval MS] [--count N]        a live view of counts and running tasks

Options for the API commands:
  --url URL       the API (default http://127.0.0.1:$LEASEHOLD_PORT, port 3000); an
                  https://<id>.execute-api.<region>.amazonaws.com URL is called with SigV4,
                  signed with your AWS credentials (environment, profile, SSO or role); the
                  sim's API URL is signed with the keys of a sim caller (--as NAME, default admin)
  --owner OWNER   sent as X-Leasehold-Owner (local stack only; default "local")
  --json          print JSON for scripts`;

const options = {
  api: { type: 'boolean' },
  worker: { type: 'boolean' },
  recovery: { type: 'boolean' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  url: { type: 'string' },
  owner: { type: 'string' },
  as: { type: 'string' },
  json: { type: 'boolean' },
  priority: { type: 'string' },
  delay: { type: 'string' },
  key: { type: 'string' },
  'max-attempts': { type: 'string' },
  status: { type: 'string' },
  type: { type: 'string' },
  limit: { type: 'string' },
  interval: { type: 'string' },
  count: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

class UsageError extends Error {}

export async function main(
  argv: string[],
  env: Record<string, string | undefined>,
  out = process.stdout,
): Promise<number> {
  const print = (text: string) => out.write(`${text}\n`);
  // The sim is development tooling with options of its own: loaded only when asked for.
  if (argv[0] === 'sim') return (await import('../../sim/cli.js')).simMain(argv.slice(1));
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
      default:
        return await apiCommand(command, args, flags, env, print);
    }
  } catch (error) {
    if (error instanceof ApiError) {
      process.stderr.write(
        `error ${error.status}: ${error.message}\n${(error.problem.errors ?? []).map((e) => `  ${e.field}: ${e.message}\n`).join('')}`,
      );
      return 1;
    }
    if (error instanceof UnreachableError || error instanceof ConfigError) {
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
  const stack = await startStack({ env, roles });
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

async function apiCommand(
  command: string,
  args: string[],
  flags: Flags,
  env: Record<string, string | undefined>,
  print: (t: string) => void,
): Promise<number> {
  const baseUrl = flags.url ?? `http://127.0.0.1:${env.LEASEHOLD_PORT || '3000'}`;
  // The deployed API takes the caller from IAM: requests to it are signed with your AWS credentials.
  const region = regionOfApiUrl(new URL(baseUrl));
  const client = new ApiClient(
    baseUrl,
    flags.owner,
    region ? sigv4Signer(region) : simSigner(baseUrl, env, flags.as),
  );
  const show = (value: unknown, human: () => string) =>
    print(flags.json ? JSON.stringify(value, null, 2) : human());
  switch (command) {
    case 'enqueue': {
      const [type, payloadText] = args;
      if (!type) throw new UsageError('enqueue needs a task type');
      let payload: unknown;
      if (payloadText !== undefined) {
        try {
          payload = JSON.parse(payloadText);
        } catch {
          throw new UsageError(`the payload must be JSON, e.g. '{"ms": 1000}' (got ${payloadText})`);
        }
      }
      const body = {
        type,
        ...(payload === undefined ? {} : { payload }),
        ...optionalInt('priority', flags.priority),
        ...optionalInt('delaySeconds', flags.delay),
        ...optionalInt('maxAttempts', flags['max-attempts']),
        ...(flags.key ? { idempotencyKey: flags.key } : {}),
      };
      const { status, body: res } = await client.request<{ task: TaskJson }>('POST', '/tasks', body);
      show(
        res,
        () =>
          `${status === 201 ? 'queued' : 'already queued (same idempotency key)'} ${res.task.id} (${res.task.type}, ${res.task.status})`,
      );
      return 0;
    }
    case 'get': {
      const { body } = await client.request<{ task: TaskJson }>(
        'GET',
        `/tasks/${encodeURIComponent(needId(args))}`,
      );
      show(body, () => taskDetails(body.task));
      return 0;
    }
    case 'list': {
      const query = new URLSearchParams({
        ...(flags.status ? { status: flags.status } : {}),
        ...(flags.type ? { type: flags.type } : {}),
        ...(flags.limit ? { limit: flags.limit } : {}),
      });
      const { body } = await client.request<{ tasks: TaskJson[]; nextCursor?: string }>(
        'GET',
        `/tasks${query.size ? `?${query}` : ''}`,
      );
      show(
        body,
        () =>
          taskTable(body.tasks) +
          (body.nextCursor ? '\n(more: narrow with --status/--type or raise --limit)' : ''),
      );
      return 0;
    }
    case 'cancel':
    case 'retry': {
      const { body } = await client.request<{ task: TaskJson }>(
        'POST',
        `/tasks/${encodeURIComponent(needId(args))}/${command}`,
      );
      show(body, () => `${body.task.id} ${body.task.status}`);
      return 0;
    }
    case 'stats': {
      const stats = computeStats(await client.allTasks(), Date.now());
      show(stats, () => statsText(stats));
      return 0;
    }
    case 'watch': {
      const interval = intFlag(flags.interval, 'interval') ?? 1000;
      const count = intFlag(flags.count, 'count') ?? Number.POSITIVE_INFINITY;
      const tty = process.stdout.isTTY;
      for (let i = 0; i < count; i++) {
        const screen = watchScreen(await client.allTasks(), Date.now(), client.baseUrl);
        print(`${tty ? '\x1b[2J\x1b[H' : i > 0 ? '\n' : ''}${screen}`);
        if (i + 1 < count) await new Promise((r) => setTimeout(r, interval));
      }
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
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

function optionalInt(field: string, value: string | undefined): Record<string, number> {
  const n = intFlag(value, field);
  return n === undefined ? {} : { [field]: n };
}
