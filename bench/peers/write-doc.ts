/**
 * `npx tsx bench/peers/write-doc.ts [--check] [--results <json>] [--out <md>]`: writes
 * docs/peer-benchmark.md from bench/peers/results.json (`npm run bench:peers` does this itself after a
 * full run). `--check` writes nothing and exits 1 when the page on disk is not what the JSON gives.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderPeerDoc } from './render.js';
import type { PeersReport } from './types.js';

export const RESULTS_PATH = fileURLToPath(new URL('./results.json', import.meta.url));
export const DOC_PATH = fileURLToPath(new URL('../../docs/peer-benchmark.md', import.meta.url));

export async function writePeerDoc(resultsPath = RESULTS_PATH, outPath = DOC_PATH): Promise<void> {
  const report = JSON.parse(await readFile(resultsPath, 'utf8')) as PeersReport;
  await mkdir(dirname(outPath), { recursive: true });
  await writeFile(outPath, renderPeerDoc(report));
}

async function main(args: string[]): Promise<void> {
  const option = (name: string, fallback: string) =>
    args.includes(name) ? (args[args.indexOf(name) + 1] ?? fallback) : fallback;
  const resultsPath = option('--results', RESULTS_PATH);
  const outPath = option('--out', DOC_PATH);
  if (args.includes('--check')) {
    const page = renderPeerDoc(JSON.parse(await readFile(resultsPath, 'utf8')) as PeersReport);
    if ((await readFile(outPath, 'utf8').catch(() => '')) !== page) {
      console.error(`${outPath} is not what ${resultsPath} gives: run npx tsx bench/peers/write-doc.ts`);
      process.exit(1);
    }
    console.log(`${outPath} is up to date`);
    return;
  }
  await writePeerDoc(resultsPath, outPath);
  console.log(`wrote ${outPath} from ${resultsPath}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1]))
  await main(process.argv.slice(2));
