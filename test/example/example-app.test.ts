/**
 * Leasehold as a library, the way a user adopts it: the packed tarball installed into an empty folder
 * (plain `node` imports `leasehold/client`, `npx leasehold --help` runs with no tsx), and into the
 * minimal app in examples/minimal (its own package.json, task module and stack with `new
 * Leasehold(...)`): its types check, `cdk synth` bundles its task module, and the sim runs that
 * template until a signed enqueue of the app's own task type reaches SUCCESS. Figures for the closing
 * note: the tarball's and the installed sizes, and the client's import closure.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeProcess, type NodeProcess } from '../support/node-process.js';

const repository = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'leasehold-example-'));
/** A user's shell: none of this repository's test settings, no AWS region (the CDK CLI picks its default). */
const userEnv: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) =>
      !k.startsWith('LEASEHOLD_') &&
      !k.startsWith('VITEST') &&
      !k.startsWith('AWS_') &&
      !k.startsWith('CDK_'),
  ),
);
let tarball: string;
let sim: NodeProcess | undefined;

function run(command: string, args: string[], cwd: string, timeout = 300_000): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, env: userEnv, encoding: 'utf8', timeout });
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} in ${cwd} exited ${result.status}:\n${result.stdout}\n${result.stderr}`,
    );
  return result;
}

const install = (cwd: string, args: string[] = []) =>
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...args], cwd);

function sizeOf(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

const figure = (line: string) => process.stdout.write(`FIGURE ${line}\n`);

beforeAll(() => {
  // `npm pack` builds dist/ first (prepack).
  const packed = run('npm', ['pack', '--pack-destination', work, '--json'], repository);
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
    filename: string;
    size: number;
    unpackedSize: number;
    entryCount: number;
  }[];
  tarball = join(work, info!.filename);
  figure(`npm pack: ${info!.size} bytes packed, ${info!.unpackedSize} unpacked, ${info!.entryCount} files`);
});

afterAll(async () => {
  if (sim) {
    process.kill(-sim.child.pid!, 'SIGINT');
    await Promise.race([sim.exited, new Promise((r) => setTimeout(r, 20_000))]);
    try {
      process.kill(-sim.child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  rmSync(work, { recursive: true, force: true });
});

describe('the packed library in an empty folder', () => {
  it('installs; plain node imports leasehold/client; npx leasehold --help runs without tsx', async () => {
    const empty = join(work, 'empty');
    cpSync(join(repository, 'examples/empty'), empty, { recursive: true });
    install(empty, [tarball]);
    figure(
      `installed into an empty folder: node_modules ${sizeOf(join(empty, 'node_modules'))} bytes, leasehold itself ${sizeOf(join(empty, 'node_modules/leasehold'))} bytes`,
    );
    expect(readdirSync(join(empty, 'node_modules'))).not.toContain('tsx');
    expect(readdirSync(join(empty, 'node_modules'))).not.toContain('aws-cdk-lib');
    const imported = run(
      'node',
      ['-e', "import('leasehold/client').then((m) => console.log(typeof m.createClient))"],
      empty,
    );
    expect(imported.stdout.trim()).toBe('function');
    const help = run('npx', ['leasehold', '--help'], empty);
    expect(help.stdout).toMatch(/Usage: leasehold <command>/);
    expect(help.stdout).toMatch(/serve/);
    expect(help.stdout).toMatch(/sim/);
    expect(help.stdout).toMatch(/dashboard/);
    expect(`${help.stdout}${help.stderr}`).not.toMatch(/NodeVersionSupport|Node\.js version/i);
    // The tooling's packages are optional peers: a command that needs one says what to install.
    const serve = spawnSync('npx', ['leasehold', 'dynamodb', '--port', '0'], {
      cwd: empty,
      env: userEnv,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(serve.status).not.toBe(0);
    expect(`${serve.stdout}${serve.stderr}`).toMatch(
      /needs the dynalite package, which is not installed: npm install --save-dev dynalite@4\.0\.0/,
    );
    // The client's import closure, bundled as a user's bundler would: none of the store, CDK or DynamoDB SDK.
    const bundle = await build({
      entryPoints: [join(empty, 'node_modules/leasehold/dist/shared/client/index.js')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.entries(bundle.metafile.inputs);
    const own = inputs.filter(([path]) => path.includes('node_modules/leasehold/'));
    figure(
      `leasehold/client closure: ${inputs.length} files, ${(inputs.reduce((s, [, i]) => s + i.bytes, 0) / 1024).toFixed(0)} KB (${own.length} of them leasehold's, ${(own.reduce((s, [, i]) => s + i.bytes, 0) / 1024).toFixed(0)} KB); bundled ${(bundle.outputFiles[0]!.contents.length / 1024).toFixed(0)} KB`,
    );
    for (const [path] of inputs) {
      expect(path).not.toMatch(/dist\/shared\/store\/|dist\/cdk\/|aws-cdk-lib|constructs|client-dynamodb/);
    }
  });
});

describe('examples/minimal, a user app built on the package', () => {
  it('type-checks, synthesizes with its own task module, and runs in the sim to SUCCESS', async () => {
    const app = join(work, 'app');
    cpSync(join(repository, 'examples/minimal'), app, {
      recursive: true,
      filter: (src) => !/node_modules|cdk\.out|\.leasehold-sim|leasehold\.tgz/.test(src),
    });
    cpSync(tarball, join(app, 'leasehold.tgz'));
    install(app);
    // The consumer's own files against the package's declarations, every entry (leasehold, /client,
    // /client/direct in src/, /cdk in bin/app.mjs checked as JavaScript), skipLibCheck off.
    run('npx', ['tsc', '--noEmit'], app);
    const synth = run('npx', ['cdk', 'synth', '--quiet', '--no-notices', '-o', 'cdk.out'], app);
    expect(`${synth.stdout}${synth.stderr}`).not.toMatch(/ERROR/);
    const template = JSON.parse(
      run(
        'node',
        ['-e', "process.stdout.write(require('fs').readFileSync('cdk.out/Greetings.template.json','utf8'))"],
        app,
      ).stdout,
    ) as { Resources: Record<string, { Type: string }> };
    expect(Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function')).toHaveLength(
      4,
    );

    sim = await startNodeProcess(['leasehold', 'sim', '--assembly', 'cdk.out'], {
      command: 'npx',
      cwd: app,
      env: userEnv,
      detached: true,
      ready: /Ctrl-C stops it/,
      what: 'npx leasehold sim --assembly cdk.out',
      timeoutMs: 180_000,
    });
    const url = /HTTP API\s+(\S+)/.exec(sim.output())![1]!;
    expect(sim.output()).toMatch(/functions\s+TasksApi, TasksWorker, TasksRecovery, TasksFire/);
    const enqueued = run(
      'npx',
      ['leasehold', '--url', url, 'enqueue', 'greetings.hello', '{"name":"Ada"}'],
      app,
    );
    const id = /queued (\S+) \(greetings\.hello, QUEUED\)/.exec(enqueued.stdout)![1]!;
    let task: { status: string; result?: unknown } = { status: 'QUEUED' };
    for (const deadline = Date.now() + 120_000; task.status !== 'SUCCESS' && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 2_000));
      const got = run('npx', ['leasehold', '--url', url, 'get', id, '--json'], app);
      task = (JSON.parse(got.stdout.slice(got.stdout.indexOf('{'))) as { task: typeof task }).task;
    }
    expect(task).toMatchObject({ status: 'SUCCESS', result: { greeting: 'Hello, Ada' } });
    // Its schema is the app's: a payload it does not accept is a 400 naming the field, nothing queued.
    const refused = spawnSync(
      'npx',
      ['leasehold', '--url', url, 'enqueue', 'greetings.hello', '{"nom":"Ada"}'],
      {
        cwd: app,
        env: userEnv,
        encoding: 'utf8',
      },
    );
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/error 400: .*payload\.name/);
    writeFileSync(join(work, 'done'), id);
  });

  it('leasehold serve --tasks src/tasks.ts runs the same task type locally, on plain Node', async () => {
    const app = join(work, 'app');
    const port = 3100 + (process.pid % 500);
    const serve = await startNodeProcess(['leasehold', 'serve', '--tasks', 'src/tasks.ts'], {
      command: 'npx',
      cwd: app,
      env: { ...userEnv, LEASEHOLD_PORT: String(port), LEASEHOLD_DATA_DIR: join(work, 'serve-data') },
      detached: true,
      ready: /Ctrl-C stops it/,
      what: 'npx leasehold serve --tasks src/tasks.ts',
      timeoutMs: 60_000,
    });
    try {
      const url = `http://127.0.0.1:${port}`;
      const enqueued = run(
        'npx',
        ['leasehold', '--url', url, 'enqueue', 'greetings.hello', '{"name":"Grace"}'],
        app,
      );
      const id = /queued (\S+) \(greetings\.hello, QUEUED\)/.exec(enqueued.stdout)![1]!;
      let task: { status: string; result?: unknown } = { status: 'QUEUED' };
      for (const deadline = Date.now() + 30_000; task.status !== 'SUCCESS' && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 500));
        const got = run('npx', ['leasehold', '--url', url, 'get', id, '--json'], app);
        task = (JSON.parse(got.stdout.slice(got.stdout.indexOf('{'))) as { task: typeof task }).task;
      }
      expect(task).toMatchObject({ status: 'SUCCESS', result: { greeting: 'Hello, Grace' } });
    } finally {
      process.kill(-serve.child.pid!, 'SIGINT');
      await Promise.race([serve.exited, new Promise((r) => setTimeout(r, 15_000))]);
    }
  });
});
