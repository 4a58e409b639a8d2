/**
 * Import rules for Leasehold, checked by `npm run lint:deps` (dependency-cruiser).
 *
 * - No circular imports in the library (shared/, cdk/), the tooling (tools/), the reference app or the bench.
 * - The production core (shared/, the library the Lambdas bundle) never imports
 *   development tooling (the CLI, the local stack, the web dashboard, the sim, tests, the bench) or the
 *   user's task content
 *   (shared/tasks/catalog.ts, shared/tasks/demo.ts): the entry points bring the catalog.
 * - functions/ are the composition roots: they may import the catalog, but no development tooling.
 * - cdk/ (the construct, part of the library) imports neither tooling nor the reference app (infra/,
 *   functions/, tasks/): it bundles the task module a deployment names.
 * - infra/ (the reference CDK app) does not import the CLI or the local stack.
 *
 * Imports are followed as TypeScript resolves them with tsconfig.json (NodeNext), so a `./x.js`
 * specifier counts as an import of `./x.ts`; type-only imports count too.
 */

/** Development tooling (the CLI ships it; no Lambda bundles it) and test code: the library never imports these. */
const DEV_TOOLING = ['^tools/cli/', '^tools/local/', '^tools/dashboard/', '^tools/sim/', '^test/', '^bench/'];
/**
 * The user's task content; only the composition roots (functions/, infra/, the CLI, the local stack)
 * bring it. It lives in tasks/ (formerly shared/tasks/catalog.ts and shared/tasks/demo.ts).
 */
const TASK_CONTENT = ['^tasks/', '^shared/tasks/catalog[.]ts$', '^shared/tasks/demo[.]ts$'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'This import closes a cycle. Break it by moving the shared piece into its own module or by ' +
        'passing the dependency in (the composition root wires it).',
      from: { path: '^(shared|cdk|functions|infra|bench|tools)/' },
      to: { circular: true },
    },
    {
      name: 'core-not-to-dev-tooling',
      severity: 'error',
      comment:
        'The production core (shared/) must not import ' +
        'the CLI, the local stack, the web dashboard, the sim, tests or the bench: the Lambdas bundle the core.',
      // shared/cli/leasehold.mjs only forwards a stale npx link to the CLI's launcher (see that file).
      from: { path: '^shared/', pathNot: '^shared/cli/leasehold[.]mjs$' },
      to: { path: DEV_TOOLING },
    },
    {
      name: 'core-not-to-task-content',
      severity: 'error',
      comment:
        'The production core must not import the task catalog or the demo tasks: the entry points ' +
        '(functions/*.ts, the local stack, the CLI) bring the task definitions and pass them in.',
      // write-openapi.ts is a repository tool, an entry point nothing imports: the document it writes
      // describes the catalog's payload schemas.
      from: {
        path: '^shared/',
        pathNot: ['^shared/api/write-openapi[.]ts$', ...TASK_CONTENT],
      },
      to: { path: TASK_CONTENT },
    },
    {
      name: 'functions-not-to-dev-tooling',
      severity: 'error',
      comment:
        'functions/ are the Lambda entry points: they may bring the task catalog, but not the CLI, the ' +
        'local stack, the sim, tests or the bench.',
      from: { path: '^functions/' },
      to: { path: DEV_TOOLING },
    },
    {
      name: 'cdk-not-to-tooling-or-app',
      severity: 'error',
      comment:
        'cdk/ is the construct users install: it must not import development tooling or the reference ' +
        "app's code (infra/, functions/, tasks/); the task module comes from the deployment's props.",
      from: { path: '^cdk/' },
      to: { path: [...DEV_TOOLING, ...TASK_CONTENT, '^infra/', '^functions/'] },
    },
    {
      name: 'infra-not-to-local-or-cli',
      severity: 'error',
      comment: 'The CDK app must not import the local stack or the CLI.',
      from: { path: '^infra/' },
      to: { path: ['^tools/local/', '^tools/cli/'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment:
        'This import does not resolve to a file or an installed package. If it is a relative import, ' +
        'the rules above cannot see where it goes either.',
      // The bin's launcher imports the build (dist/) only where the sources are not beside it: in the
      // installed package, never in this repository, where dist/ need not exist.
      from: { pathNot: '^tools/cli/leasehold[.]mjs$' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules'] },
    // Scratch reproductions (tsconfig.json leaves them out too), build output and dot folders such as
    // .leasehold/ and .tmp/. ('^[.][^./]' leaves unresolved './x.js' imports in, for not-to-unresolvable.)
    exclude: { path: ['^test/repro/', '^cdk[.]out/', '^dist/', '^examples/', '^coverage/', '^[.][^./]'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      // The package's own entries by name resolve to their sources here, as for tsc and vitest.
      conditionNames: ['leasehold-source', 'import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.d.ts', '.js', '.mjs', '.cjs', '.mts', '.cts', '.json'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
