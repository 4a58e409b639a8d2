/**
 * The sim runs each function from a root of its own (tools/sim/lambda/function-root.ts): a CommonJS bundle
 * synthesized inside an ESM project loads as it does on Lambda, and resolves nothing from the
 * project's node_modules.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ancestorsHolding, layOutFunctionRoots } from '../tools/sim/lambda/function-root.js';

const project = mkdtempSync(join(tmpdir(), 'leasehold-esm-project-'));
afterAll(() => rmSync(project, { recursive: true, force: true }));

/** A user's project: ESM, a dependency in node_modules, and a CommonJS bundle where cdk synth puts it. */
function esmProjectWithBundle(): string {
  writeFileSync(join(project, 'package.json'), '{"name":"app","type":"module"}');
  mkdirSync(join(project, 'node_modules', 'only-in-project'), { recursive: true });
  writeFileSync(join(project, 'node_modules', 'only-in-project', 'index.js'), 'module.exports = 1;');
  const asset = join(project, '.leasehold-sim', 'cdk.out', 'asset.abc');
  mkdirSync(asset, { recursive: true });
  // What esbuild writes for format cjs.
  writeFileSync(
    join(asset, 'index.js'),
    '"use strict"; module.exports = { handler: () => "ran as CommonJS" };',
  );
  writeFileSync(
    join(asset, 'forgot.js'),
    'exports.handler = () => { require("only-in-project"); return "resolved"; };',
  );
  return asset;
}

/** What the sim's runtime client does with `_HANDLER`: require the file, call the export. */
const load = (file: string) =>
  spawnSync(process.execPath, ['-e', 'console.log(require(process.argv[1]).handler())', file], {
    encoding: 'utf8',
  });

describe('function roots', () => {
  const asset = esmProjectWithBundle();
  const roots = layOutFunctionRoots([{ logicalId: 'WorkerFunction', assetDir: asset }]);
  afterAll(() => roots.remove());

  it('the bundle fails where cdk synth wrote it (the project is ESM) and loads from its function root', () => {
    // Node 22 says `module is not defined in ES module scope`; Node 20's require(esm) finds no handler.
    const inPlace = load(join(asset, 'index.js'));
    expect(inPlace.status).not.toBe(0);
    expect(inPlace.stdout).not.toContain('ran as CommonJS');

    const root = roots.taskRoot('WorkerFunction');
    expect(root.startsWith(project)).toBe(false);
    const fromRoot = load(join(root, 'index.js'));
    expect(fromRoot.stderr).toBe('');
    expect(fromRoot.stdout.trim()).toBe('ran as CommonJS');
  });

  it('the nearest package.json above a root has no type, and no node_modules of the project is reachable', () => {
    const root = roots.taskRoot('WorkerFunction');
    const [nearest] = ancestorsHolding(root, 'package.json');
    expect(nearest).toBeDefined();
    expect(nearest!.startsWith(project)).toBe(false);
    expect(JSON.parse(String(spawnSync('cat', [nearest!]).stdout)).type).toBeUndefined();
    // A module only the project's node_modules has: Lambda would not have it either.
    expect(load(join(root, 'forgot.js')).stderr).toMatch(/Cannot find module 'only-in-project'/);
  });

  it('names an unknown function and removes every root', () => {
    expect(() => roots.taskRoot('Nope')).toThrow(/no function root for Nope/);
    const other = layOutFunctionRoots([{ logicalId: 'A', assetDir: asset }]);
    other.remove();
    expect(ancestorsHolding(other.taskRoot('A'), 'index.js')).toEqual([]);
  });
});
