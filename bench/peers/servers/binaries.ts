/** Finds server binaries on this machine: PATH first, then where Debian puts PostgreSQL's. */
import { accessSync, constants, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { spawnSync } from 'node:child_process';

/** Debian installs initdb and pg_ctl only under /usr/lib/postgresql/<major>/bin, outside PATH. */
const POSTGRES_DIRS = () => {
  try {
    return readdirSync('/usr/lib/postgresql')
      .sort((a, b) => Number(b) - Number(a))
      .map((major) => `/usr/lib/postgresql/${major}/bin`);
  } catch {
    return [];
  }
};

/** The absolute path of an executable `name`, or undefined when it is not installed. */
export function findBinary(name: string, extraDirs: string[] = []): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...extraDirs];
  return dirs.map((dir) => join(dir, name)).find(executable);
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** initdb, pg_ctl and postgres from one installation, or undefined when any is missing. */
export function findPostgres(): { initdb: string; pgCtl: string; postgres: string } | undefined {
  // Prefer one bin directory that has all three, so initdb and the server are the same major version.
  for (const dir of POSTGRES_DIRS()) {
    const [initdb, pgCtl, postgres] = ['initdb', 'pg_ctl', 'postgres'].map((name) => join(dir, name));
    if ([initdb, pgCtl, postgres].every((p) => executable(p!)))
      return { initdb: initdb!, pgCtl: pgCtl!, postgres: postgres! };
  }
  const initdb = findBinary('initdb');
  const pgCtl = findBinary('pg_ctl');
  const postgres = findBinary('postgres');
  return initdb && pgCtl && postgres ? { initdb, pgCtl, postgres } : undefined;
}

/** The first line `binary --version` prints. */
export function versionOf(binary: string): string {
  const out = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  return (out.stdout || out.stderr || '').split('\n')[0]!.trim();
}
