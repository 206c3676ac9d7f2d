/** Black-box: what `svc serve --store` refuses at start, each with a clear message and no password shown. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { adminQuery, freshPgSchema, type PgSchema } from './helpers/pg.js';
import { makeSandbox, startServer, svc, type Sandbox } from './helpers/svc.js';

let sb: Sandbox;
let schema: PgSchema;

before(async () => {
  sb = makeSandbox();
  schema = await freshPgSchema();
});

after(async () => {
  sb.cleanup();
  await schema.drop();
});

/** The URL with a password in it (trust authentication ignores it), so the tests can check it is never shown. */
function withPassword(url: string): string {
  const u = new URL(url);
  u.username = u.username || 'postgres';
  u.password = 'topsecretpw';
  return u.toString();
}

test('a schema newer than this build: svc serve refuses to start and names both versions', async () => {
  // The first start migrates the schema; it is then marked as one step newer than this build.
  const first = await startServer(sb, ['--store', schema.url]);
  await first.stop();
  await adminQuery(`INSERT INTO ${schema.name}.schema_migrations (version, name) VALUES (9999, 'from_a_newer_build')`);
  const r = svc(sb, ['serve', '--port', '0', '--host', '127.0.0.1', '--store', withPassword(schema.url)]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /schema is at version 9999, newer than this build knows/);
  assert.doesNotMatch(r.stdout + r.stderr, /topsecretpw/);
});

test('--log-files without --store is refused (exit 2)', () => {
  const files = svc(sb, ['serve', '--port', '0', '--log-files', sb.home]);
  assert.equal(files.code, 2);
  assert.match(files.stderr, /--log-files goes with --store/);
});

test('an unreachable database: the start fails naming the URL without its password', () => {
  const r = svc(sb, [
    'serve',
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--store',
    'postgres://svc:topsecretpw@127.0.0.1:1/test',
  ]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /unavailable/);
  assert.doesNotMatch(r.stdout + r.stderr, /topsecretpw/);
});

test('--db with --store, or with SVC_STORE_URL, names two stores: refused (exit 2) before anything starts', () => {
  const both = svc(sb, ['serve', '--port', '0', '--store', withPassword(schema.url), '--db', sb.db]);
  assert.equal(both.code, 2, both.stdout + both.stderr);
  assert.match(both.stderr, /--db and --store name two different stores/);
  const fromEnv = svc(sb, ['serve', '--port', '0', '--db', sb.db], {
    env: { SVC_STORE_URL: withPassword(schema.url) },
  });
  assert.equal(fromEnv.code, 2, fromEnv.stdout + fromEnv.stderr);
  assert.match(fromEnv.stderr, /--db and --store \(from SVC_STORE_URL\) name two different stores/);
  assert.doesNotMatch(both.stdout + both.stderr + fromEnv.stdout + fromEnv.stderr, /topsecretpw/);
});
