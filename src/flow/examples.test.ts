// Golden tests: every examples/**/*.flow.md compiles to the IR in its sibling .ir.json (UPDATE_GOLDEN=1 rewrites them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileFlow, type LibrarySource } from './compile.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const EXAMPLES = join(ROOT, 'examples');
const LIBS: LibrarySource[] = readdirSync(join(EXAMPLES, 'libs'))
  .filter((n) => n.endsWith('.lib.md'))
  .map((n) => ({
    name: basename(n, '.lib.md'),
    file: `examples/libs/${n}`,
    text: readFileSync(join(EXAMPLES, 'libs', n), 'utf8'),
  }));

function flows(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? flows(p) : e.name.endsWith('.flow.md') ? [p] : [];
  });
}

const all = flows(EXAMPLES).sort();

test('the examples corpus holds a flow per feature and the demo flows', () => {
  assert.ok(all.length >= 18, `found ${all.length}`);
  assert.ok(all.some((p) => p.includes(`${join('examples', 'demo')}`)));
});

for (const path of all) {
  const rel = relative(ROOT, path);
  test(`${rel} compiles to its golden IR`, () => {
    const r = compileFlow(readFileSync(path, 'utf8'), { file: rel, libs: LIBS });
    assert.deepEqual(r.diagnostics, []);
    const golden = path.replace(/\.flow\.md$/, '.ir.json');
    const pretty = `${JSON.stringify(r.ir, null, 2)}\n`;
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(golden, pretty);
    assert.ok(existsSync(golden), `${rel}: no golden IR; run UPDATE_GOLDEN=1 npm test to create it`);
    assert.equal(pretty, readFileSync(golden, 'utf8'), `${rel}: IR changed; run UPDATE_GOLDEN=1 npm test if intended`);
  });
}
