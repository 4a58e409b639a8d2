/**
 * `npx tsx shared/api/write-openapi.ts [--check]` (`npm run openapi`): writes docs/openapi.json, the
 * document GET /openapi.json serves, formatted as Prettier formats the repository. `--check` writes
 * nothing and exits 1 when the file is stale. test/openapi.test.ts fails on a stale file too. A tool
 * for the repository: nothing imports it, so no Lambda bundles it (or Prettier, or the generator). It
 * brings the task catalog, as an entry point does, for the payload schemas (`x-leasehold-task-types`).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { taskDefinitions } from '../../tasks/catalog.js';
import { API_ROUTES } from './api-handler.js';
import { openApiDocument } from './openapi.js';

export const OPENAPI_JSON = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

/** The file's text: the document as JSON, formatted with the repository's Prettier settings. */
export async function renderOpenApiJson(): Promise<string> {
  const options = (await prettier.resolveConfig(OPENAPI_JSON)) ?? {};
  const document = openApiDocument(API_ROUTES, taskDefinitions);
  return prettier.format(JSON.stringify(document), { ...options, filepath: OPENAPI_JSON });
}

async function main(args: string[]): Promise<void> {
  const text = await renderOpenApiJson();
  const current = await readFile(OPENAPI_JSON, 'utf8').catch(() => undefined);
  if (args.includes('--check')) {
    if (current !== text) {
      process.stderr.write(`${OPENAPI_JSON} is stale: run \`npm run openapi\`.\n`);
      process.exitCode = 1;
    }
    return;
  }
  if (current !== text) await writeFile(OPENAPI_JSON, text);
  process.stdout.write(`${current === text ? 'unchanged' : 'wrote'} ${OPENAPI_JSON}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1]))
  await main(process.argv.slice(2));
