/**
 * Packages only the tooling needs (the local stack's and the sim's dynalite, the dashboard's page
 * libraries): optional peer dependencies of the package, so an app that only deploys the construct
 * and enqueues with the client does not install them. A command that needs one and finds it missing
 * says what to install.
 */
import { LeaseholdError } from '../shared/errors.js';

/** The versions this release is tested with (package.json's devDependencies pin the same). */
export const TOOL_PACKAGES = { dynalite: '4.0.0', preact: '11.2.0', htm: '3.1.1' } as const;

export class ToolPackageMissingError extends LeaseholdError {
  override name = 'ToolPackageMissingError';
  override readonly code = 'TOOL_PACKAGE_MISSING';
  override readonly status = 500;
}

/** The error for `name` missing, naming what needs it and the command that installs it. */
export function toolPackageMissing(
  name: keyof typeof TOOL_PACKAGES,
  neededBy: string,
): ToolPackageMissingError {
  return new ToolPackageMissingError(
    `${neededBy} needs the ${name} package, which is not installed: npm install --save-dev ${name}@${TOOL_PACKAGES[name]}`,
  );
}

/** Whether `error` is Node's "no such package" for `name` (import or import.meta.resolve). */
export function isMissingPackage(error: unknown, name: string): boolean {
  const e = error as { code?: string; message?: string };
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    (e.message ?? '').includes(`'${name}`)
  );
}
