/**
 * `npm run sim` / `leasehold sim`: synthesizes the stack and runs it locally until Ctrl-C.
 *   --data-dir DIR            where sim.json, logs and queue messages go (default .leasehold-sim)
 *   --port N                  the HTTP API's port (default: a free one)
 *   --assembly DIR            run an existing `cdk synth` output instead of synthesizing
 *   -c leasehold:<name>=VALUE CDK context for the synth, as `cdk deploy -c` takes it
 *   --account-concurrency N   the account's Lambda concurrency quota (default 1000)
 *   --recursion-limit N       invocations of one chain before Lambda's recursive loop detection stops
 *                             the next, unless the function's RecursiveLoop is Allow (default 16, as Lambda)
 *   --no-cpu-limit            run the functions at the host's full CPU instead of their memory's share
 *                             (1,769 MB = one vCPU; cgroups where writable, else a SIGSTOP/SIGCONT duty cycle)
 *   --dynamodb dynalite       use dynalite instead of Amazon's DynamoDB Local
 *   --index-lag MIN-MAX       GSI queries see each write after a delay drawn per write (ms; default 50-500;
 *                             0 turns the lag off)
 *   --throttle-scale X        DynamoDB's on-demand limits (4,000/12,000 WCU/RCU a second per table and GSI,
 *                             1,000/3,000 per partition key) times X (default 1; 0.01 is reachable locally;
 *                             0 turns throttling off)
 *   --ttl-delay MS            expired items (TTL) are deleted up to MS after expiry (default 300000, a sweep
 *                             every 10 s; 0 deletes them within a second; off never deletes them)
 */
import { parseArgs } from 'node:util';
import { indexLagFlag, throttleScaleFlag, ttlDelayFlag } from './dynamodb/strict-flags.js';
import { startSim, type SimInfo } from './sim.js';

export function simBanner(info: SimInfo, dataDir: string): string[] {
  const caller = info.callers.find((c) => c.name === 'admin')!;
  return [
    `Leasehold sim of stack ${info.stackName} (${info.region}, account ${info.accountId}), up in ${(info.startupMs / 1000).toFixed(1)} s`,
    `  HTTP API   ${info.apiUrl}  (IAM auth: sign with SigV4, service execute-api; callers and keys in ${dataDir}/sim.json)`,
    `  DynamoDB   ${info.dynamodb.backend} ${info.dynamodb.version}, table ${info.dynamodb.tables.join(', ')}, behind an IAM gate`,
    `  Scheduler  ${info.schedulerEndpoint}`,
    `  functions  ${info.functions.map((f) => f.logicalId.replace(/Function\w*$/, '')).join(', ')}; logs in ${dataDir}/logs/`,
    `  inspect    ${info.adminUrl}/state`,
    ...info.notices.map((n) => `  notice     ${n}`),
    '',
    `Try: npx leasehold --url ${info.apiUrl} enqueue demo.echo '{"hello":"world"}'   (signed as ${caller.name})`,
    'Ctrl-C stops it.',
  ];
}

function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} takes a positive integer, got "${value}"`);
  return n;
}

export async function simMain(argv: string[]): Promise<number> {
  // The sim's own SDK clients run on this Node; the functions run on their runtime's.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      port: { type: 'string' },
      assembly: { type: 'string' },
      context: { type: 'string', short: 'c', multiple: true },
      'account-concurrency': { type: 'string' },
      'recursion-limit': { type: 'string' },
      'no-cpu-limit': { type: 'boolean' },
      dynamodb: { type: 'string' },
      'index-lag': { type: 'string' },
      'throttle-scale': { type: 'string' },
      'ttl-delay': { type: 'string' },
    },
    strict: true,
  });
  const dataDir = values['data-dir'] ?? '.leasehold-sim';
  const context = Object.fromEntries(
    (values.context ?? []).map((kv) => {
      const i = kv.indexOf('=');
      if (i < 1) throw new Error(`-c takes name=value, got "${kv}"`);
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  );
  if (values.dynamodb !== undefined && values.dynamodb !== 'dynalite' && values.dynamodb !== 'dynamodb-local')
    throw new Error('--dynamodb takes dynalite or dynamodb-local');
  const sim = await startSim({
    dataDir,
    context,
    ...(values.assembly ? { assemblyDir: values.assembly } : {}),
    ...(values.port ? { apiPort: Number(values.port) } : {}),
    ...(values['account-concurrency'] ? { accountConcurrency: Number(values['account-concurrency']) } : {}),
    ...(values['recursion-limit']
      ? { recursionLimit: positiveInteger('--recursion-limit', values['recursion-limit']) }
      : {}),
    ...(values['no-cpu-limit'] ? { cpuLimit: false } : {}),
    ...(values.dynamodb ? { dynamodb: values.dynamodb as 'dynalite' | 'dynamodb-local' } : {}),
    ...(values['index-lag'] !== undefined ? { indexLag: indexLagFlag(values['index-lag']) } : {}),
    ...(values['throttle-scale'] !== undefined
      ? { throttleScale: throttleScaleFlag(values['throttle-scale']) }
      : {}),
    ...(values['ttl-delay'] !== undefined ? { ttl: ttlDelayFlag(values['ttl-delay']) } : {}),
  });
  for (const line of simBanner(sim.info, dataDir)) process.stdout.write(`${line}\n`);
  await new Promise<void>((done) => {
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  await sim.close();
  return 0;
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  simMain(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
