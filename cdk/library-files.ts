/**
 * Where the library's own modules are, for the bundler: the package's built JavaScript when installed
 * (dist/), the TypeScript sources in this repository. Plain node:fs, no CDK import (the benchmark uses
 * it too).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The absolute path of a library module, named from the package's root as in its sources
 * (`shared/lambda/worker-entry`): its `.js` beside this file's build, else its `.ts` source.
 */
export function libraryModule(fromRoot: string): string {
  for (const extension of ['.js', '.ts']) {
    const path = fileURLToPath(new URL(`../${fromRoot}${extension}`, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error(
    `leasehold: the library module ${fromRoot} is missing beside ${fileURLToPath(import.meta.url)}`,
  );
}
