// Lint: typescript-eslint's recommended rules plus the layering rules of docs/architecture.md,
// checked on the import strings themselves (no resolver), so a forbidden import cannot slip through.
import tseslint from 'typescript-eslint';

const FOLDERS = ['common', 'ir', 'expr', 'flow', 'store', 'queue', 'engine', 'gate', 'app', 'doors', 'housekeeping', 'cli'];

/** What each lower layer may import besides itself; everything else in src/ is refused. */
const LAYERS = {
  common: { allowed: [], why: 'common/ is the leaf layer' },
  ir: { allowed: ['common'], why: 'ir/ holds only the IR types' },
  expr: { allowed: ['common', 'ir'], why: 'expressions know only the IR and common helpers' },
  flow: { allowed: ['common', 'ir', 'expr'], why: 'the compiler is pure: it imports only common, ir and expr' },
  store: { allowed: ['common', 'ir'], why: 'stores know no HTTP, engine or app' },
  queue: { allowed: ['common', 'ir', 'store'], why: 'the queue sits below the engine' },
  engine: { allowed: ['common', 'ir', 'expr', 'store', 'queue'], why: 'the engine reads IR, never Markdown or HTTP' },
  gate: { allowed: ['common', 'store'], why: 'the gate knows stores, not doors' },
};

const layerRules = Object.entries(LAYERS).map(([layer, { allowed, why }]) => ({
  files: [`src/${layer}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        paths: layer === 'store' ? [] : [{ name: 'better-sqlite3', message: 'Only store/ talks to SQLite.' }],
        patterns: [
          {
            group: FOLDERS.filter((f) => f !== layer && !allowed.includes(f)).map((f) => `**/${f}/**`),
            message: `${why} (docs/architecture.md).`,
          },
          { group: ['fastify', '@grpc/*'], message: 'Only doors/ (and the service wiring in app/) speak a wire protocol.' },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'examples/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/store/**', ...Object.keys(LAYERS).map((l) => `src/${l}/**`)],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'better-sqlite3', message: 'Only store/ talks to SQLite.' }] }],
    },
  },
  ...layerRules,
);
