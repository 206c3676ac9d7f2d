import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IntegrityError } from '../common/errors.js';
import { compileFlow } from '../flow/compile.js';
import { ArtifactsRepo } from '../store/artifacts-repo.js';
import { openDb } from '../store/db.js';
import { registryMigrations } from '../store/migrations/registry.js';
import { FlowLoader } from './flow-loader.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-registry-'));
const db = openDb(join(dir, 'registry.db'), registryMigrations);
test.after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const SRC = '---\nflowdoc_version: "0.1"\nflow: hello\ntenant: acme\n---\n## Step: answer\n```ntd\n{"hi": "{{ ctx.input.name }}"}\n```\n';

test('the loader returns the latest IR, parsed once per hash, and a new loader re-verifies a corrupted artifact', () => {
  const r = compileFlow(SRC);
  const repo = new ArtifactsRepo(db);
  repo.publish({ tenant: 'acme', name: 'hello', version: '1.0.0', bytes: r.bytes!, hash: r.hash!, createdAt: '2024-01-01T00:00:00Z' });
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
