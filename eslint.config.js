// Lint: typescript-eslint's recommended rules plus the layering rules of docs/architecture.md.
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const layer = (target, from, message) => ({ target, from, message });

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'examples/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver': { node: { extensions: ['.ts', '.js'] } } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'off',
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            layer('./src/common', './src/!(common)/**', 'common/ is the leaf layer'),
            layer('./src/flow', './src/!(common|ir|expr|flow)/**', 'the compiler is pure: it imports only common, ir and expr'),
            layer('./src/store', './src/!(common|ir|store)/**', 'stores know no HTTP, engine or app'),
            layer('./src/queue', './src/!(common|ir|store|queue)/**', 'the queue sits below the engine'),
            layer('./src/engine', './src/!(common|ir|expr|store|queue|engine)/**', 'the engine reads IR, never Markdown or HTTP'),
            layer('./src/gate', './src/!(common|store|gate)/**', 'the gate knows stores, not doors'),
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/store/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'better-sqlite3', message: 'Only store/ talks to SQLite.' }] }],
    },
  },
);
