import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sha256Hex } from '../../common/digest.js';
import { SvcError } from '../../common/errors.js';
import { openDb } from '../../store/sqlite/db.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { SqliteArtifactsStore } from '../../store/sqlite/sqlite-artifacts-store.js';
import { listLatestFlows, showFlowVersion } from './registry.js';

function registry(): SqliteArtifactsStore {
  const artifacts = new SqliteArtifactsStore(openDb(':memory:', registryMigrations));
  for (const version of ['1', '2']) {
    const bytes = JSON.stringify({ flow: 'hello', version });
    artifacts.publish({
      tenant: 'acme',
      name: 'hello',
      version,
      bytes,
      hash: sha256Hex(bytes),
      createdAt: `2026-01-0${version}T00:00:00Z`,
      source: version === '2' ? '# hello v2' : undefined,
    });
  }
  return artifacts;
}

test('a flow shows its latest version unless another is asked for, with its source and compiled form', async () => {
  const artifacts = registry();
  const latest = await showFlowVersion(artifacts, 'acme', 'hello');
  assert.deepEqual(
    latest.versions.map((v) => [v.version, v.latest]),
    [
      ['1', false],
      ['2', true],
    ],
  );
  assert.equal(latest.shown.version, '2');
  assert.equal(latest.source, '# hello v2');
  assert.deepEqual(latest.compiled, { flow: 'hello', version: '2' });
  // Not a compiled flow this svc reads: the page says why there is no diagram and shows the rest.
  assert.match('problem' in latest.diagram ? latest.diagram.problem : '', /holds IR version undefined/);
  const first = await showFlowVersion(artifacts, 'acme', 'hello', '1');
  assert.equal(first.shown.version, '1');
  assert.equal(first.source, undefined);
  assert.deepEqual(first.compiled, { flow: 'hello', version: '1' });
  assert.equal((await showFlowVersion(artifacts, 'acme', 'hello', '9')).shown.version, '2');
  assert.deepEqual(
    (await listLatestFlows(artifacts)).map((f) => [f.tenant, f.name, f.version]),
    [['acme', 'hello', '2']],
  );
});

test('a flow without versions is not found', async () => {
  await assert.rejects(
    showFlowVersion(registry(), 'acme', 'nope'),
    (err: unknown) => err instanceof SvcError && err.code === 'SVC_ERR_NOT_FOUND' && /acme\/nope/.test(err.message),
  );
});
