// Lint: typescript-eslint's recommended rules plus the layering rules of docs/architecture.md,
// checked on the import strings themselves (no resolver), so a forbidden import cannot slip through.
// Cycles are checked separately by `npm run check:cycles` (madge), part of `npm test`.
import tseslint from 'typescript-eslint';

/**
 * Every folder of src/ and what it may import besides itself; everything else in src/ is refused.
 * The direction: common -> ir/expr -> flow; common -> store -> queue -> storage; common -> store ->
 * queue -> engine -> gate -> app -> doors/housekeeping -> serve -> cli -> main. storage/ (openStore:
 * a target opened into every store and the queue backend) is taken by app, serve and cli only.
 */
const LAYERS = {
  common: { allowed: [], why: 'common/ is the leaf layer' },
  ir: { allowed: ['common'], why: 'ir/ holds only the IR types' },
  expr: { allowed: ['common', 'ir'], why: 'expressions know only the IR and common helpers' },
  flow: { allowed: ['common', 'ir', 'expr'], why: 'the compiler is pure: it imports only common, ir and expr' },
  store: { allowed: ['common', 'ir'], why: 'stores know no HTTP, engine or app' },
  queue: { allowed: ['common', 'ir', 'store'], why: 'the queue sits below the engine' },
  storage: {
    allowed: ['common', 'ir', 'store', 'queue'],
    why: 'storage/ opens the stores and the queue backend of a target, and knows nothing above them',
  },
  engine: { allowed: ['common', 'ir', 'expr', 'store', 'queue'], why: 'the engine reads IR, never Markdown or HTTP' },
  gate: { allowed: ['common', 'store'], why: 'the gate knows stores, not doors' },
  app: {
    allowed: ['common', 'ir', 'expr', 'flow', 'store', 'queue', 'storage', 'engine', 'gate'],
    why: 'app/ holds the use cases every door calls and imports no door',
  },
  doors: {
    allowed: ['common', 'ir', 'expr', 'store', 'queue', 'engine', 'gate', 'app'],
    why: 'a door calls app/ use cases; it does not compile flows or reach the timers, the composition root or the CLI',
  },
  housekeeping: {
    allowed: ['common', 'ir', 'store', 'queue', 'engine', 'app'],
    why: 'housekeeping runs app/ and store work on timers; it knows no door',
  },
  serve: {
    allowed: ['common', 'ir', 'expr', 'store', 'queue', 'storage', 'engine', 'gate', 'app', 'doors', 'housekeeping'],
    why: 'serve/ is the composition root: it wires everything below it, but not the CLI or the compiler',
  },
  cli: {
    allowed: ['common', 'ir', 'expr', 'flow', 'store', 'queue', 'storage', 'engine', 'gate', 'app', 'serve'],
    why: 'the CLI parses flags and calls app/ (and serve/ for `svc serve`), never a door',
  },
};
const FOLDERS = Object.keys(LAYERS);

/** Only these layers speak a wire protocol. */
const WIRE_LAYERS = new Set(['doors', 'serve']);
const SQLITE = { name: 'better-sqlite3', message: 'Only store/ talks to SQLite.' };
const PG = { name: 'pg', message: 'Only store/ talks to PostgreSQL (through store/pg/pg-db.ts).' };
const PROM = {
  name: 'prom-client',
  message:
    'Only the composition root (serve/metrics.ts) knows prom-client; the layers report through observer interfaces.',
};
const OTEL_FILE = 'src/common/trace-context/spans.ts';
const OTEL = {
  name: '@opentelemetry/api',
  message: `Only ${OTEL_FILE} knows @opentelemetry/api; the layers make spans through its TraceSpan (docs/observability.md).`,
};

/** No file of src/ reaches into the tests: test code (helpers, conformance suites) lives under test/. */
const NO_TEST = {
  group: ['**/test/**'],
  message: 'src/ never imports test/: test code lives under test/ (docs/architecture.md).',
};

/** What lies behind the store and queue contracts: the backends, the writer rooms, and storage/ that opens them. */
const STORAGE_BEHIND_CONTRACTS = [
  ...['sqlite', 'pg', 'event-log', 'audit', 'migrate'].map((r) => `**/store/${r}/**`),
  ...['file', 'pg'].map((r) => `**/queue/${r}/**`),
  '**/storage/**',
];

/**
 * The rooms of app/ and what each must not reach (besides the app layer's own rule): the runtime
 * every delivery passes through knows no operator use case, account or maintenance task; accounts
 * and maintenance stand alone; the use cases may take the runtime and the accounts.
 */
const APP_ROOMS = {
  runtime: {
    refused: ['use-cases', 'accounts', 'maintenance'],
    why: 'app/runtime/ is what every delivery passes through: it knows no use case, account or maintenance task',
  },
  'use-cases': {
    refused: ['maintenance'],
    why: 'the operator use cases take the runtime and the accounts, never an offline maintenance task',
    // Use cases see only the store contracts: the CLI and serve/ open the stores and pass them in.
    // Their unit tests (*.test.ts) are left out: they build real SQLite stores to run a use case on.
    extra: {
      group: STORAGE_BEHIND_CONTRACTS,
      message:
        'use cases see only the store and queue contracts (store/contracts/index.js, queue/index.js); the caller opens the stores',
      ignores: ['src/app/use-cases/**/*.test.ts'],
    },
  },
  accounts: {
    refused: ['runtime', 'use-cases', 'maintenance'],
    why: 'app/accounts/ (UI users, login throttle, passwords, roles) stands alone',
  },
  testing: {
    refused: ['accounts', 'maintenance'],
    why: 'app/testing/ (svc test) runs flows with stubs in the process: it takes the runtime, never an account or a maintenance task',
    // No state directory, no store, no queue backend: an example touches nothing on disk but the files it reads.
    extra: {
      group: STORAGE_BEHIND_CONTRACTS,
      message: 'svc test opens no store, queue backend or state directory',
      ignores: ['src/app/testing/**/*.test.ts'],
    },
  },
  diagram: {
    refused: ['accounts', 'maintenance', 'testing'],
    why: 'app/diagram/ draws a compiled flow (graph, layout, SVG, Mermaid, DOT): pure, it reads nothing and knows no account or test run',
  },
  maintenance: {
    refused: ['use-cases', 'accounts'],
    why: 'app/maintenance/ (offline tasks on a state directory or store) takes no use case or account',
  },
};
/**
 * The rooms of queue/ and the backends each must not reach (besides the queue layer's own rule):
 * the contract and the coordination locks import no backend, and each backend imports the contract
 * (and the shared pieces beside it), never the other backend. Only queue/index.ts shows both.
 */
const QUEUE_ROOMS = [
  {
    files: ['src/queue/contract.ts', 'src/queue/contract/**/*.ts'],
    refused: ['file', 'pg'],
    why: 'the queue contract imports no backend',
  },
  {
    files: ['src/queue/coordination/**/*.ts'],
    refused: ['file', 'pg'],
    why: 'queue/coordination/ (leader locks, lock files, the node lease) is shared by the backends and imports neither',
  },
  {
    files: ['src/queue/*.ts'],
    ignores: ['src/queue/index.ts'],
    refused: ['file', 'pg'],
    why: 'the pieces every queue backend shares import no backend',
  },
  {
    files: ['src/queue/file/**/*.ts'],
    refused: ['pg'],
    why: 'the file backend imports the contract, never PostgreSQL',
  },
  {
    files: ['src/queue/pg/**/*.ts'],
    refused: ['file'],
    why: 'the PostgreSQL backend imports the contract, never the files',
  },
];
/** Layers above app/ that must not reach its offline maintenance room: doors and housekeeping take the runtime and the use cases. */
const NO_MAINTENANCE = {
  group: ['**/app/maintenance/**'],
  message: 'doors and housekeeping take app/runtime/ and the use cases, never app/maintenance/ (docs/architecture.md).',
};

/**
 * The rooms of store/ and what each must not reach (besides the store layer's own rule): each
 * backend imports the contracts, never the other backend; the contracts import no backend and no
 * writer room. The event-log and audit writer rooms and migrate/ may take both backends.
 */
const STORE_ROOMS = {
  sqlite: {
    group: ['pg', 'event-log', 'audit', 'migrate'].flatMap((r) => [`**/store/${r}/**`, `../${r}/**`]),
    why: 'store/sqlite/ implements the contracts; it imports them, never the PostgreSQL backend or a writer room',
  },
  pg: {
    group: ['**/sqlite/**', ...['event-log', 'audit', 'migrate'].flatMap((r) => [`**/store/${r}/**`, `../${r}/**`])],
    why: 'store/pg/ implements the contracts; it imports them, never the SQLite backend or a writer room',
  },
  contracts: {
    group: ['sqlite', 'pg', 'event-log', 'audit', 'migrate'].flatMap((r) => [`**/store/${r}/**`, `../${r}/**`]),
    why: "store/contracts/ is the store layer's face: it imports no backend and no writer room",
  },
};

/** The no-restricted-imports options of one layer, with the extra pattern groups of a room inside it. */
function layerImports(layer, extraPatterns = []) {
  const { allowed, why } = LAYERS[layer];
  return [
    'error',
    {
      paths: [...(layer === 'store' ? [] : [SQLITE, PG]), ...(layer === 'serve' ? [] : [PROM]), OTEL],
      patterns: [
        {
          group: FOLDERS.filter((f) => f !== layer && !allowed.includes(f)).map((f) => `**/${f}/**`),
          message: `${why} (docs/architecture.md).`,
        },
        ...(WIRE_LAYERS.has(layer)
          ? []
          : [
              {
                group: ['fastify', '@grpc/*'],
                message: 'Only doors/ (and the composition root in serve/) speak a wire protocol.',
              },
            ]),
        NO_TEST,
        ...(layer === 'doors' || layer === 'housekeeping' ? [NO_MAINTENANCE] : []),
        ...extraPatterns,
      ],
    },
  ];
}

const layerRules = FOLDERS.map((layer) => ({
  files: [`src/${layer}/**/*.ts`],
  rules: { 'no-restricted-imports': layerImports(layer) },
}));
const storeRoomRules = Object.entries(STORE_ROOMS).map(([room, { group, why }]) => ({
  files: [`src/store/${room}/**/*.ts`],
  rules: { 'no-restricted-imports': layerImports('store', [{ group, message: `${why} (docs/architecture.md).` }]) },
}));
const appRoomRules = Object.entries(APP_ROOMS).flatMap(([room, { refused, why, extra }]) => {
  const roomPattern = {
    group: refused.flatMap((r) => [`**/app/${r}/**`, `../${r}/**`]),
    message: `${why} (docs/architecture.md).`,
  };
  const files = [`src/app/${room}/**/*.ts`];
  if (extra === undefined) return [{ files, rules: { 'no-restricted-imports': layerImports('app', [roomPattern]) } }];
  // The room's extra rule, merged into its options (a later object for the same rule replaces an
  // earlier one), on every file of the room but those it leaves out, which keep the room's rule alone.
  return [
    {
      files,
      ignores: extra.ignores,
      rules: {
        'no-restricted-imports': layerImports('app', [
          roomPattern,
          { group: extra.group, message: `${extra.message} (docs/architecture.md).` },
        ]),
      },
    },
    { files: extra.ignores, rules: { 'no-restricted-imports': layerImports('app', [roomPattern]) } },
  ];
});

const queueRoomRules = QUEUE_ROOMS.map(({ files, ignores, refused, why }) => ({
  files,
  ...(ignores === undefined ? {} : { ignores }),
  rules: {
    'no-restricted-imports': layerImports('queue', [
      {
        group: refused.flatMap((r) => [`**/queue/${r}/**`, `./${r}/**`, `../${r}/**`]),
        message: `${why} (docs/architecture.md).`,
      },
    ]),
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
    // The bin entry: it runs the CLI and nothing else.
    files: ['src/main.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [SQLITE, PG, OTEL],
          patterns: [
            NO_TEST,
            {
              group: FOLDERS.filter((f) => f !== 'cli' && f !== 'common').map((f) => `**/${f}/**`),
              message: 'main.ts runs the CLI (docs/architecture.md).',
            },
          ],
        },
      ],
    },
  },
  ...layerRules,
  ...storeRoomRules,
  ...appRoomRules,
  ...queueRoomRules,
  {
    // The one module that speaks to the OpenTelemetry API: the common layer's rule, less that path.
    files: [OTEL_FILE],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [SQLITE, PG, PROM],
          patterns: [
            NO_TEST,
            {
              group: FOLDERS.filter((f) => f !== 'common').map((f) => `**/${f}/**`),
              message: `${LAYERS.common.why} (docs/architecture.md).`,
            },
            {
              group: ['fastify', '@grpc/*'],
              message: 'Only doors/ (and the composition root in serve/) speak a wire protocol.',
            },
          ],
        },
      ],
    },
  },
);
