#!/usr/bin/env node
// The `leasehold` command. From the installed package: the compiled CLI (dist/), on plain Node. In this
// repository, where the TypeScript sources sit beside this file: those, through tsx, with no build step.
import { existsSync } from 'node:fs';

const source = new URL('./leasehold.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../../dist/tools/cli/leasehold.js');
}
