/**
 * `leasehold serve --tasks FILE`: the local stack with your own task types, from the module that
 * exports `taskDefinitions` (the one the construct's `tasks` names). JavaScript is imported as it is;
 * TypeScript is bundled first with esbuild (the construct's peer dependency), its packages left to
 * your node_modules, into node_modules/.cache/leasehold/serve/ beside them, so plain Node runs it.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TaskDefinition } from '../../shared/tasks/define.js';
import { isMissingPackage } from '../tool-packages.js';
import { UsageError } from './usage-error.js';

export async function loadTaskModule(file: string, cwd: string): Promise<TaskDefinition[]> {
  const path = resolve(cwd, file);
  if (!existsSync(path)) throw new UsageError(`--tasks ${file}: there is no such file (${path})`);
  let url = pathToFileURL(path).href;
  if (/\.[cm]?tsx?$/.test(path)) {
    const esbuild = await import('esbuild').catch((error: unknown) => {
      throw isMissingPackage(error, 'esbuild')
        ? new UsageError(
            `--tasks ${file}: a TypeScript module needs esbuild (npm install --save-dev esbuild), or give its compiled .js`,
          )
        : error;
    });
    // One output per source module: Node keeps a module by its URL for the life of the process.
    const name = createHash('sha256').update(path).digest('hex').slice(0, 16);
    const out = join(cwd, 'node_modules', '.cache', 'leasehold', 'serve', `${name}.mjs`);
    try {
      await esbuild.build({
        entryPoints: [path],
        bundle: true,
        platform: 'node',
        format: 'esm',
        packages: 'external',
        outfile: out,
        logLevel: 'silent',
      });
    } catch (error) {
      const errors = (error as { errors?: { text: string }[] }).errors;
      throw new UsageError(
        `--tasks ${file}: ${errors ? errors.map((e) => e.text).join('; ') : String(error)}`,
      );
    }
    url = pathToFileURL(out).href;
  }
  const loaded = (await import(url)) as { taskDefinitions?: unknown };
  if (!Array.isArray(loaded.taskDefinitions))
    throw new UsageError(
      `--tasks ${file}: the module exports no taskDefinitions array (export const taskDefinitions = [defineTask(...)])`,
    );
  return loaded.taskDefinitions as TaskDefinition[];
}
