/**
 * The versions a run measured: the installed packages (read from node_modules, so a lockfile change
 * shows), and the Leasehold tree (commit, and whether shared/ had uncommitted changes, since the runtime
 * measured is the working tree, not the commit).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);

/** `name`'s installed version; `under` first (a nested copy is the one that package loads). */
function installed(name: string, under?: string): string {
  const places = [...(under ? [`node_modules/${under}/node_modules/${name}`] : []), `node_modules/${name}`];
  for (const place of places) {
    try {
      return (JSON.parse(readFileSync(new URL(`${place}/package.json`, root), 'utf8')) as { version: string })
        .version;
    } catch {
      // not installed here
    }
  }
  return 'not installed';
}

function leaseholdTree(): string {
  const version = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string })
    .version;
  try {
    const git = (args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    const commit = git(['rev-parse', '--short', 'HEAD']);
    const dirty = git(['status', '--porcelain', '--', 'shared']) !== '';
    return `${version} at ${commit}${dirty ? ' with uncommitted changes in shared/' : ''}`;
  } catch {
    return version;
  }
}

export function packageVersions(): Record<string, string> {
  return {
    leasehold: leaseholdTree(),
    dynalite: installed('dynalite'),
    '@aws-sdk/client-dynamodb': installed('@aws-sdk/client-dynamodb'),
    bullmq: installed('bullmq'),
    ioredis: installed('ioredis'),
    'graphile-worker': installed('graphile-worker'),
    pg: installed('pg', 'graphile-worker'),
    node: process.version,
  };
}
