import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

/** The CommonJS modules a fresh Node process has loaded after importing `modules` (ESM importing CJS fills require.cache). */
function commonJsLoadedBy(modules: string[]): string[] {
  const script = [
    "import { createRequire } from 'node:module';",
    `for (const m of ${JSON.stringify(modules)}) await import(m);`,
    'process.stdout.write(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));',
  ].join('\n');
  return JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
  ) as string[];
}

const loadsSqlite = (files: string[]) => files.some((f) => f.includes('/better-sqlite3/'));

test('loading the engine does not load SQLite (it depends on the event sink contract only)', () => {
  assert.equal(loadsSqlite(commonJsLoadedBy([new URL('./index.js', import.meta.url).href])), false);
  // The check itself sees SQLite when a store is loaded.
  assert.equal(loadsSqlite(commonJsLoadedBy([new URL('../store/sqlite/db.js', import.meta.url).href])), true);
});
