/**
 * How every Leasehold Lambda is bundled: the CDK stack passes these to NodejsFunction, and the
 * benchmark (bench/measures/cold-start.ts) hands the same values to esbuild to measure what ships.
 * Plain values, no CDK import, so the benchmark does not load aws-cdk-lib.
 */
export const LAMBDA_BUNDLING = {
  minify: true,
  sourceMap: true,
  target: 'node22',
  /** OutputFormat.CJS in the CDK's terms. */
  format: 'cjs',
  // Bundle the pinned AWS SDK instead of using the runtime's copy.
  externalModules: [] as string[],
  mainFields: ['module', 'main'],
} as const;
