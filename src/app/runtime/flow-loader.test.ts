import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IntegrityError } from '../../common/errors.js';
import { compileFlow } from '../../flow/compile.js';
import { SqliteArtifactsStore } from '../../store/sqlite/sqlite-artifacts-store.js';
import { openDb } from '../../store/sqlite/db.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { FlowLoader } from './flow-loader.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-registry-'));
const db = openDb(join(dir, 'registry.db'), registryMigrations);
test.after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const SRC =
  '---\nflowdoc_version: "0.1"\nflow: hello\ntenant: acme\n---\n## Step: answer\n```ntd\n{"hi": "{{ ctx.input.name }}"}\n```\n';

test('the loader returns the latest IR, parsed once per hash, and a new loader re-verifies a corrupted artifact', () => {
  const r = compileFlow(SRC);
  const repo = new SqliteArtifactsStore(db);
  repo.publish({
    tenant: 'acme',
    name: 'hello',
    version: '1.0.0',
    bytes: r.bytes!,
    hash: r.hash!,
    createdAt: '2024-01-01T00:00:00Z',
  });
  const loader = new FlowLoader(repo);
  const a = loader.latest('acme', 'hello');
  assert.equal(a?.version, '1.0.0');
  assert.equal(a?.created_at, '2024-01-01T00:00:00Z');
  assert.equal(a?.ir.steps[0]?.name, 'answer');
  assert.equal(loader.latest('acme', 'hello')?.ir, a?.ir);
  assert.equal(loader.latest('acme', 'missing'), undefined);
  db.prepare('UPDATE artifacts SET bytes = ? WHERE hash = ?').run(Buffer.from('{}'), r.hash);
  assert.equal(loader.latest('acme', 'hello')?.ir, a?.ir, 'a verified artifact stays cached by hash');
  assert.throws(() => new FlowLoader(repo).latest('acme', 'hello'), IntegrityError);
});

/** Publishes the hello flow under each name (version 1.0.0); their artifact hashes, in order. */
function publishNamed(repo: SqliteArtifactsStore, names: readonly string[]): string[] {
  return names.map((name) => {
    const r = compileFlow(SRC.replace('flow: hello', `flow: ${name}`));
    repo.publish({
      tenant: 'acme',
      name,
      version: '1.0.0',
      bytes: r.bytes!,
      hash: r.hash!,
      createdAt: '2024-01-01T00:00:00Z',
    });
    return r.hash!;
  });
}

test('the IR cache is bounded and keeps what is read: the entry not read since the last pass goes first', () => {
  const repo = new SqliteArtifactsStore(db);
  const hashes = publishNamed(repo, ['a1', 'a2', 'a3', 'a4']);
  const [h1, h2, h3, h4] = hashes as [string, string, string, string];
  const loader = new FlowLoader(repo, undefined, { irCacheMax: 3 });
  const first = new Map(hashes.slice(0, 3).map((h) => [h, loader.ir(h)]));
  assert.equal(loader.ir(h1), first.get(h1), 'read again: cached');
  loader.ir(h3);
  loader.ir(h4); // full: h2 was not read since it was added, so it goes; h1 and h3 stay
  assert.equal(loader.ir(h1), first.get(h1));
  assert.equal(loader.ir(h3), first.get(h3));
  assert.notEqual(loader.ir(h2), first.get(h2), 'h2 was evicted and parsed again');
});

test('peekIr (the start-up scan) keeps what it parsed only in free room, never pushing out what traffic uses', () => {
  const repo = new SqliteArtifactsStore(db);
  const hashes = publishNamed(repo, ['peek-a', 'peek-b', 'peek-c']);
  const [a, b, c] = hashes as [string, string, string];
  const loader = new FlowLoader(repo, undefined, { irCacheMax: 2 });
  const used = loader.ir(a);
  const peeked = loader.peekIr(b);
  assert.equal(loader.peekIr(b), peeked, 'room left: kept');
  assert.equal(loader.ir(b), peeked, 'traffic gets the scanned IR without parsing it again');
  const full = loader.peekIr(c);
  assert.notEqual(loader.peekIr(c), full, 'full: not kept');
  assert.equal(loader.ir(a), used, 'what traffic used stays');
  assert.equal(loader.peekIr(a), used, 'a cached IR is returned as is');
});
