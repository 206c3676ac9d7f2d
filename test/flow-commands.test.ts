import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { createTenant, setTenantEnabled } from './helpers/registry-setup.js';
import { storeRows } from './helpers/store-sql.js';
import { makeSandbox, svc } from './helpers/svc.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const LIBS = join(ROOT, 'examples', 'libs');
const sb = makeSandbox();
test.after(() => sb.cleanup());

const write = (name: string, text: string): string => {
  const p = join(sb.home, name);
  writeFileSync(p, text);
  return p;
};
const HELLO = `---
flowdoc_version: "0.1"
flow: hello
tenant: acme
---
## Step: greet
\`\`\`ntd
{"hi": "{{ ctx.input.name }}"}
\`\`\`
`;
const hello = write('hello.flow.md', HELLO);

/** The version `latest` of acme/hello points at. */
const latestOfHello = () =>
  storeRows<{ version: string }>(
    sb,
    'registry',
    "SELECT version FROM flow_latest WHERE tenant = 'acme' AND name = 'hello'",
  );

test('validate exits 0 on a clean flow', () => {
  const r = svc(sb, ['validate', hello]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /ok/);
});

test('validate exits 1 and prints every error as file:line: step: message', () => {
  const bad = write(
    'bad.flow.md',
    '---\nflowdoc_version: "0.1"\nflow: bad\ntenant: acme\ncolour: red\n---\n## Step: a\nendpoint: http://x\nsoap_version: "1.5"\n## Fault: f\nendpoint: http://x\nsoap_version: 9\n',
  );
  const r = svc(sb, ['validate', bad]);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(`${bad}:5: front matter: unknown front-matter key "colour"`), r.stderr);
  assert.ok(r.stderr.includes(`${bad}:9: a: soap_version must be 1.1 or 1.2`), r.stderr);
  assert.ok(r.stderr.includes(`${bad}:12: f: soap_version must be 1.1 or 1.2`), r.stderr);
});

test('validate resolves use: against --libs and refuses an unknown library', () => {
  const uses = write(
    'uses.flow.md',
    HELLO.replace('## Step: greet', '## Step: check\nuse: common/require-id\n\n## Step: greet'),
  );
  assert.equal(svc(sb, ['validate', uses, '--libs', LIBS]).code, 0);
  const r = svc(sb, ['validate', uses]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /:7: check: no library "common"/);
});

test('compile prints the IR; with -o it writes it and prints its hash', () => {
  const r = svc(sb, ['compile', hello]);
  assert.equal(r.code, 0, r.stderr);
  const ir = JSON.parse(r.stdout) as { flow: string; tenant: string };
  assert.equal(ir.flow, 'hello');
  const out = join(sb.home, 'hello.ir.json');
  const w = svc(sb, ['compile', hello, '-o', out]);
  assert.equal(w.code, 0, w.stderr);
  const bytes = readFileSync(out);
  assert.equal(w.stdout.trim(), createHash('sha256').update(bytes).digest('hex'));
  assert.equal(bytes.toString(), r.stdout.trim());
  const p = svc(sb, ['compile', hello, '-p']);
  assert.match(p.stdout, /\n {2}"irVersion": 2,/);
});

test('compile refuses a step-configuration error that validate does not check', () => {
  const q = write(
    'q.flow.md',
    HELLO.replace('---\n## Step', 'effects: [queue_publish]\n---\n## Step').replace(
      '## Step: greet',
      '## Step: greet\neffects: [queue_publish]',
    ),
  );
  assert.equal(svc(sb, ['validate', q]).code, 0);
  const r = svc(sb, ['compile', q]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /q\.flow\.md:\d+: greet: a queue_publish step needs "queue/);
});

test('deploy refuses an unregistered tenant, naming the repairing command', () => {
  const r = svc(sb, ['deploy', hello, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /svc tenant create --id acme --display-name/);
});

test('deploy refuses a disabled tenant, naming the repairing command', () => {
  createTenant(sb, 'acme');
  setTenantEnabled(sb, 'acme', false);
  const r = svc(sb, ['deploy', hello, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /svc tenant enable --id acme/);
  setTenantEnabled(sb, 'acme', true);
});

test('deploy publishes, prints flow, tenant, version, hash and db, and moves latest', () => {
  const r = svc(sb, ['deploy', hello, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 0, r.stderr);
  const compiled = svc(sb, ['compile', hello, '-o', join(sb.home, 'x.json')]).stdout.trim();
  for (const re of [/flow: +hello/, /tenant: +acme/, /version: +1\.0\.0/, new RegExp(`hash: +${compiled}`)])
    assert.match(r.stdout, re);
  // The store it published to: the registry file, or in the PostgreSQL pass the store URL.
  if (sb.store === undefined) assert.match(r.stdout, /db: +\S+registry\.db/);
  else assert.ok(r.stdout.includes(`db:      ${sb.store}\n`), r.stdout);
  const changed = write('hello2.flow.md', HELLO.replace('"hi"', '"hello"'));
  assert.equal(svc(sb, ['deploy', changed, '-v', '1.1.0', '--db', sb.db]).code, 0);
  assert.deepEqual(latestOfHello(), [{ version: '1.1.0' }]);
  assert.deepEqual(storeRows(sb, 'registry', "SELECT count(*) AS n FROM flow_versions WHERE name = 'hello'"), [
    { n: 2 },
  ]);
});

test('deploying an existing version fails and changes nothing', () => {
  const r = svc(sb, ['deploy', hello, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /already has version "1\.0\.0"/);
  assert.deepEqual(latestOfHello(), [{ version: '1.1.0' }]);
});

test('deploy refuses a flow with publication errors and stores nothing', () => {
  const dir = join(sb.home, 'sub');
  mkdirSync(dir, { recursive: true });
  const bad = write(
    'sub/b.flow.md',
    HELLO.replace('flow: hello', 'flow: other').replace('---\n## Step', 'queue_backoff_factor: 0.5\n---\n## Step'),
  );
  const r = svc(sb, ['deploy', bad, '-v', '1', '--db', sb.db]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /b\.flow\.md:5: front matter: "queue_backoff_factor" must be at least 1\.0/);
  assert.deepEqual(storeRows(sb, 'registry', "SELECT 1 FROM flow_versions WHERE name = 'other'"), []);
});
