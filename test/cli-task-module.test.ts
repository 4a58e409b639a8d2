/** `leasehold serve --tasks FILE`: the module's task types, a TypeScript one bundled first; what to fix when it cannot be used. */
import { describe, expect, it } from 'vitest';
import { loadTaskModule } from '../tools/cli/task-module.js';
import { UsageError } from '../tools/cli/usage-error.js';

const cwd = process.cwd();

describe('loadTaskModule', () => {
  it('loads the task types a TypeScript module exports, runnable by plain Node', async () => {
    const definitions = await loadTaskModule('test/fixtures/report-tasks.ts', cwd);
    expect(definitions.map((d) => d.name)).toEqual(['reports.build']);
    expect(definitions[0]!.schema.safeParse({ month: '2026-12' }).success).toBe(true);
    expect(definitions[0]!.schema.safeParse({ month: 'December' }).success).toBe(false);
  });

  it('a missing file, or a module without taskDefinitions, is a usage error saying what to give', async () => {
    await expect(loadTaskModule('src/nope.ts', cwd)).rejects.toThrow(UsageError);
    await expect(loadTaskModule('src/nope.ts', cwd)).rejects.toThrow(
      /--tasks src\/nope\.ts: there is no such file/,
    );
    await expect(loadTaskModule('test/fixtures/no-definitions.ts', cwd)).rejects.toThrow(
      /the module exports no taskDefinitions array/,
    );
  });
});
