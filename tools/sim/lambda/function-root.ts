/**
 * Where each function's code runs in the sim: a copy of its asset in a folder of its own, as Lambda
 * unpacks a function's zip into /var/task. On Lambda nothing above /var/task holds a package.json or a
 * node_modules folder, so a bundle's `.js` files load as Node's default (CommonJS, or ESM only by its
 * own syntax) and resolve only what the bundle carries. An asset run where `cdk synth` wrote it (the
 * sim's data dir, `.leasehold-sim/` inside the project by default) sits under the project's
 * package.json, whose `"type": "module"` makes Node load the CommonJS bundle as ESM
 * (`module is not defined in ES module scope`), and under the project's node_modules, which would hide
 * a module the bundle forgot.
 */
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';

/**
 * The boundary file above every function root: the nearest package.json a bundle without its own
 * finds. It has no `type` field, so files load as they do where no package.json exists at all.
 */
const BOUNDARY_PACKAGE_JSON = {
  name: 'leasehold-sim-function-roots',
  private: true,
  description:
    'Written by the Leasehold sim: no "type" field, so a function bundle loads as it does on Lambda, where no package.json sits above /var/task.',
};

export interface FunctionRoots {
  /** The folder the function's code was copied to (its LAMBDA_TASK_ROOT). */
  taskRoot(logicalId: string): string;
  /** What above the roots could still change how a bundle loads (a node_modules folder), for a notice. */
  warnings: string[];
  remove(): void;
}

/** The folders above `dir` (nearest first) that hold `name`. */
export function ancestorsHolding(dir: string, name: string): string[] {
  const found: string[] = [];
  const { root } = parse(dir);
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, name))) found.push(join(at, name));
    if (at === root) return found;
  }
}

/** Copies each asset into `<base>/<logicalId>/task`, `<base>` a fresh folder under the system's temp dir. */
export function layOutFunctionRoots(
  functions: { logicalId: string; assetDir: string }[],
  parent = tmpdir(),
): FunctionRoots {
  const base = mkdtempSync(join(parent, 'leasehold-sim-functions-'));
  writeFileSync(join(base, 'package.json'), `${JSON.stringify(BOUNDARY_PACKAGE_JSON, null, 2)}\n`);
  const roots = new Map<string, string>();
  for (const { logicalId, assetDir } of functions) {
    const taskRoot = join(base, logicalId, 'task');
    // A copy, not a symlink: Node resolves a symlinked module to its real path, back under the project.
    cpSync(assetDir, taskRoot, { recursive: true });
    roots.set(logicalId, taskRoot);
  }
  const warnings = ancestorsHolding(dirname(base), 'node_modules').map(
    (dir) =>
      `${dir} lies above the function roots (${base}): a bundle could resolve modules from it that Lambda would not have`,
  );
  return {
    taskRoot: (logicalId) => {
      const root = roots.get(logicalId);
      if (!root) throw new Error(`no function root for ${logicalId}`);
      return root;
    },
    warnings,
    remove: () => rmSync(base, { recursive: true, force: true }),
  };
}
