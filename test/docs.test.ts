/** The docs a newcomer reads: a short README, links that resolve, a benchmark page that says what results.json says. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderBenchmarkDoc } from '../bench/write-benchmark-doc.js';

const root = resolve(import.meta.dirname, '..');
const OUTPUTS = ['bench/results-quick.json'];
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('docs', () => {
  it('the README stays short (at most 250 lines); the rest lives in docs/', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(250);
  });

  it('every relative link and code path in the README and docs/ points at a file that exists', () => {
    const missing: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(root, page), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue;
        if (!existsSync(resolve(root, dirname(page), target!))) missing.push(`${page}: ${target}`);
      }
      for (const [, path] of text.matchAll(
        /`((?:shared|functions|infra|tasks|bench|sim|test)\/[\w./-]+\.(?:ts|cjs|json|sh))`/g,
      )) {
        // Files a command writes (git-ignored) are named as outputs, not links.
        if (!existsSync(join(root, path!)) && !OUTPUTS.includes(path!)) missing.push(`${page}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('nothing refers to material outside the repository', () => {
    for (const page of pages)
      expect(readFileSync(join(root, page), 'utf8'), page).not.toMatch(
        /\.\.\/shared\/(?:DESIGN|reviews|seeds)|DESIGN\.md|\bseeds? 0\d\d\b|review finding/i,
      );
  });

  it('docs/benchmark.md is generated from bench/results.json (npm run bench:doc)', () => {
    const results = JSON.parse(readFileSync(join(root, 'bench/results.json'), 'utf8'));
    expect(readFileSync(join(root, 'docs/benchmark.md'), 'utf8')).toBe(renderBenchmarkDoc(results));
  });
});
