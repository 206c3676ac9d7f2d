/**
 * A `--import` preload for `svc serve` in tests: when the process exits, writes the names of the
 * npm packages it loaded (from the CommonJS cache, which also holds a package an ES module
 * imported) as a JSON array to the file named by SVC_TEST_LOADED_FILE.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const file = process.env.SVC_TEST_LOADED_FILE;
if (file === undefined) throw new Error('loaded-packages-preload: SVC_TEST_LOADED_FILE is not set');
const cache = createRequire(import.meta.url).cache;

process.on('exit', () => {
  const names = new Set<string>();
  for (const path of Object.keys(cache)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
    if (m) names.add(m[1]!);
  }
  writeFileSync(file, JSON.stringify([...names].sort()));
});
