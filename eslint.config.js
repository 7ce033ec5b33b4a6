// @ts-check
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import reactHooks from 'eslint-plugin-react-hooks';

/**
 * The storage boundary (docs/architecture.md): services and routes speak to repositories in domain
 * terms; the driver, the blob codec, the claims and the paging helpers (src/kernel/store) are for
 * the repositories.
 */
const storeInternals = {
  paths: [
    {
      name: 'mongodb',
      message: 'the driver stays in the store adapters (src/<area>/*.mongo.ts): ask a repository for the operation',
    },
  ],
  patterns: [
    {
      group: ['**/kernel/store/codec*', '**/kernel/store/claims*', '**/kernel/store/client*', '**/kernel/store/guard*'],
      message: 'the blob codec and the concurrency strategy are for repositories: ask a repository for the operation',
    },
    {
      group: ['**/kernel/store/paging*'],
      message: 'paging is for repositories: a repository pages its lists (its types may be imported)',
      allowTypeImports: true,
    },
  ],
};

/** src/ is the core: nothing in it imports the processes around it. */
const srcCore = {
  group: ['**/api/**', '**/worker/**', '**/workflows/**', '**/activities/**'],
  message: 'src/ is the core: it imports nothing from api, worker, workflows or activities',
};

const nodeBuiltins = [
  'fs',
  'path',
  'os',
  'crypto',
  'http',
  'https',
  'net',
  'child_process',
  'stream',
  'util',
  'events',
  'url',
];

/** The areas that live in one folder of src/ with index.ts as their door (issue: a house by feature). */
const AREAS = [
  'connections',
  'evaluations',
  'expressions',
  'interventions',
  'jobs',
  'knowledge',
  'mcp',
  'meetings',
  'neurons',
  'pathways',
  'platform',
  'receptors',
  'reflexes',
  'runs',
  'search',
  'secrets',
  'shares',
  'skills',
  'stakeholders',
  'tenancy',
  'traces',
  'usage',
  'webhooks',
];
/**
 * A second door for the workflow bundle: the pathway interpreter's deterministic core, which the
 * pathwayRun workflow evaluates as a value (the area's index.ts would load its services into every run).
 */
const WORKFLOW_DOORS = { pathways: ['./walk.ts'] };
export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      'console/dist/**',
      'clients/typescript/dist/**',
      'test-output/**',
      'snake/public/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    // The resolver maps NodeNext's `./x.js` to `./x.ts` (and tsconfig paths, package exports), so
    // import-x sees the real graph: without it every relative import was unresolved and no-cycle
    // found nothing. test/unit/import-cycles.test.ts runs the cycle rule alone over the server code.
    settings: {
      'import-x/extensions': importX.flatConfigs.typescript.settings?.['import-x/extensions'],
      'import-x/external-module-folders': ['node_modules', 'node_modules/@types'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx', '.cts', '.mts'] },
      // The node resolver second: @modelcontextprotocol/sdk's `./*` export names types the TypeScript resolver cannot find.
      'import-x/resolver-next': [
        createTypeScriptImportResolver({ project: './tsconfig.json' }),
        importX.createNodeResolver(),
      ],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Cycles are checked by test/unit/import-cycles.test.ts (TypeScript's own resolution, type-only
      // imports included, under a second): import-x's no-cycle skips type-only imports and took minutes.
      'import-x/no-cycle': 'off',
      'import-x/no-unresolved': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // Server code (docs/security.md, "No lookup by request text"): `key in object` with a computed
    // key also answers for Object.prototype's members (`constructor`, `toString`, `__proto__`).
    files: ['api/**/*.ts', 'src/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts', 'worker/**/*.ts'],
    rules: {
      // An area folder is entered by its index.ts only (docs/architecture.md); its own files, its
      // tests and benches reach in. Areas are added here as they move into their folder.
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: AREAS.map((area) => ({
            target: [
              `./src/!(${area})/**`,
              './src/*.ts',
              './api/**',
              './workflows/**',
              './activities/**',
              './worker/**',
            ],
            from: `./src/${area}`,
            except: ['./index.ts', ...(WORKFLOW_DOORS[area] ?? [])],
            message: `import the ${area} area through src/${area}/index.ts`,
          })),
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "BinaryExpression[operator='in'][left.type!='Literal']",
          message:
            '`key in object` also finds Object.prototype members (constructor, toString, __proto__…): use Object.hasOwn(object, key), a Map, or a zod enum',
        },
      ],
    },
  },
  {
    // No function over 150 lines in the server code (issue 49): a longer one is split into named
    // helpers, and a service factory into group functions over one context (docs/decisions.md).
    files: ['src/**/*.ts', 'api/**/*.ts', 'workflows/**/*.ts', 'activities/**/*.ts', 'worker/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // The console (docs/console.md): browser code under its own tsconfig (console/tsconfig.json), React's hook rules.
    files: ['console/**/*.{ts,tsx}'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'react-hooks': reactHooks, 'import-x': importX },
    rules: {
      // The two classic hook rules (the compiler-oriented ones of the recommended set do not fit the stream view, kept in refs).
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
      // import-x's resolver fails on the console's bundler-style imports (vite, extensionless paths).
      'import-x/no-cycle': 'off',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [srcCore],
        },
      ],
    },
  },
  {
    // Everything in src/ but the store adapters (`*.mongo.ts`), the kernel, the composition root and
    // the release migrations speaks to stores in domain terms.
    files: ['src/**/*.ts'],
    // the model files describe stored shapes (type imports of the codec's Blob and the driver's Binary).
    ignores: ['**/*.mongo.ts', '**/model.ts', 'src/kernel/**', 'src/compose/**', 'src/releases/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: storeInternals.paths,
          patterns: [
            srcCore,
            ...storeInternals.patterns,
            {
              group: ['./*.mongo.js', '../*/*.mongo.js'],
              message:
                "an area's code reaches its store through the contract (store.ts); only the door (index.ts) and the composition root name the adapter",
            },
          ],
        },
      ],
    },
  },
  {
    // The door exports the adapter's factory for the composition root.
    files: ['src/*/index.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: storeInternals.paths,
          patterns: [srcCore, ...storeInternals.patterns],
        },
      ],
    },
  },
  {
    files: ['api/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: storeInternals.paths,
          patterns: [
            {
              group: ['**/workflows/**', '**/activities/**', '**/worker/**'],
              message: 'api/ talks to Temporal through src/temporal and src/kernel/temporal only',
            },
            ...storeInternals.patterns,
          ],
        },
      ],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins.flatMap((m) => [m, `node:${m}`]), 'mongodb', 'ioredis'].map((name) => ({
            name,
            message: 'workflows are deterministic and hold no I/O',
          })),
          patterns: [
            {
              regex: '/src/(?!temporal/definitions|kernel/temporal/gated|pathways/walk|kernel/own\\.js)',
              message:
                'workflows import only src/temporal/definitions, src/kernel/temporal/gated, src/pathways/walk and src/kernel/own (no imports) as values (types are fine): every module a workflow imports is evaluated for each run',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
);
