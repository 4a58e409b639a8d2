/**
 * How every Leasehold Lambda is bundled: the CDK stack passes these to NodejsFunction, and the
 * benchmark (bench/measures/cold-start.ts) hands the same values to esbuild to measure what ships.
 * Plain values, no CDK import, so the benchmark does not load aws-cdk-lib.
 */
import { libraryModule } from './library-files.js';

export const LAMBDA_BUNDLING = {
  minify: true,
  target: 'node22',
  /** OutputFormat.CJS in the CDK's terms. */
  format: 'cjs',
  // Bundle the pinned AWS SDK instead of using the runtime's copy.
  externalModules: [] as string[],
  mainFields: ['module', 'main'],
} as const;

/**
 * Modules the bundles take from elsewhere (esbuild's alias; absolute paths, so they resolve from any
 * working directory the CDK bundles in). The SDK's credential chain becomes the environment's
 * credentials alone: see shared/lambda-credentials.ts.
 */
export const LAMBDA_ALIASES: Record<string, string> = {
  '@aws-sdk/credential-provider-node': libraryModule('shared/lambda-credentials'),
};
