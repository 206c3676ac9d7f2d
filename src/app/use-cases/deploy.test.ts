import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sha256Hex } from '../../common/digest.js';
import { SvcError } from '../../common/errors.js';
import { FlowPublicationError } from '../../flow/diagnostics.js';
import { SqliteArtifactsStore } from '../../store/sqlite/sqlite-artifacts-store.js';
import { openDb, type Db } from '../../store/sqlite/db.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { SqliteTenantsStore } from '../../store/sqlite/sqlite-tenants-store.js';
import { DeployRefusedError, deployFlows, listFlowFiles, type DeployOptions, type DeployResult } from './deploy.js';

const root = mkdtempSync(join(tmpdir(), 'svc-deploy-unit-'));
after(() => rmSync(root, { recursive: true, force: true }));

const flowText = (flow: string, tenant = 'acme', greeting = 'hi') =>
  `---\nflowdoc_version: "0.1"\nflow: ${flow}\ntenant: ${tenant}\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "${greeting}"}\n\`\`\`\n`;
/** Refused by the compiler on line 5 (queue_backoff_factor below 1). */
const BROKEN = flowText('broken').replace('---\n## Step', 'queue_backoff_factor: 0.5\n---\n## Step');

let cases = 0;
/** A fresh folder of flow files and a state directory beside it. */
function workspace(files: Record<string, string>): { dir: string; db: string } {
  const base = join(root, `case-${++cases}`);
  const dir = join(base, 'flows');
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return { dir, db: join(base, 'state', 'registry.db') };
}

/** The deploy on the SQLite registry at `db`, opened as the CLI opens it (a missing one reads as empty and is not created). */
async function deployTo(opts: DeployOptions & { db: string }): Promise<DeployResult> {
  const db = openDb(existsSync(opts.db) ? opts.db : ':memory:', registryMigrations);
  try {
    return await deployFlows(opts, { artifacts: new SqliteArtifactsStore(db), location: opts.db });
  } finally {
    db.close();
  }
}

function withRegistry<T>(dbPath: string, fn: (db: Db) => T): T {
  const db = openDb(dbPath, registryMigrations);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Registers tenants (`acme` active unless listed) and publishes earlier versions. */
function seed(
  dbPath: string,
  opts: { tenants?: Record<string, 'active' | 'disabled'>; published?: [string, string][] } = {},
): void {
  withRegistry(dbPath, (db) => {
    const tenants = new SqliteTenantsStore(db);
    for (const [id, status] of Object.entries(opts.tenants ?? { acme: 'active' })) {
      tenants.create({ id, displayName: id, authMethods: ['api_key'], createdAt: '2026-01-01T00:00:00Z' });
      if (status === 'disabled') tenants.setStatus(id, 'disabled');
    }
    const artifacts = new SqliteArtifactsStore(db);
    for (const [flow, version] of opts.published ?? []) {
      const bytes = `{"old":"${flow}"}`;
      artifacts.publish({
        tenant: 'acme',
        name: flow,
        version,
        bytes,
        hash: sha256Hex(bytes),
        createdAt: '2026-01-01T00:00:00Z',
      });
    }
  });
}

/** Every (tenant/flow, version) in the registry, sorted. */
function versions(dbPath: string): string[] {
  if (!existsSync(dbPath)) return [];
  return withRegistry(dbPath, (db) =>
    db
      .prepare<[], { v: string }>("SELECT tenant || '/' || name || '@' || version AS v FROM flow_versions ORDER BY v")
      .all()
      .map((r) => r.v),
  );
}

async function refusalsOf(fn: () => Promise<unknown>): Promise<[string, string][]> {
  try {
    await fn();
  } catch (err) {
    if (!(err instanceof DeployRefusedError)) throw err;
    return err.refusals.map((r) => [
      r.file.replace(/^.*\/flows\//, ''),
      r.error instanceof FlowPublicationError
        ? `diagnostics: ${r.error.diagnostics.map((d) => `${d.line}:${d.code}`).join(',')}`
        : r.error.message,
    ]);
  }
  assert.fail('the deploy was not refused');
}

describe('deployFlows refuses the whole deploy and names every refused file', () => {
  const table: {
    name: string;
    files: Record<string, string>;
    seed?: Parameters<typeof seed>[1] | 'none';
    /** Relative to the flows folder; default: the folder itself. */
    paths?: string[];
    refused: [string, RegExp][];
    /** What the registry holds afterwards (the seeded versions: nothing was added). */
    after?: string[];
  }[] = [
    {
      name: 'a file with publication errors',
      files: { 'a.flow.md': flowText('a'), 'b.flow.md': BROKEN },
      refused: [['b.flow.md', /^diagnostics: 5:BACKOFF_FACTOR_BELOW_ONE$/]],
    },
    {
      name: 'an unregistered tenant, naming the repairing command',
      files: { 'a.flow.md': flowText('a'), 'b.flow.md': flowText('b', 'ghost') },
      refused: [['b.flow.md', /tenant "ghost" is not registered; register it first: svc tenant create --id ghost/]],
    },
    {
      name: 'a disabled tenant, naming the repairing command',
      files: { 'a.flow.md': flowText('a'), 'b.flow.md': flowText('b', 'off') },
      seed: { tenants: { acme: 'active', off: 'disabled' } },
      refused: [['b.flow.md', /tenant "off" is disabled; enable it first: svc tenant enable --id off/]],
    },
    {
      name: 'a version already published for one flow',
      files: { 'a.flow.md': flowText('a'), 'b.flow.md': flowText('b') },
      seed: { published: [['b', '1.0.0']] },
      refused: [['b.flow.md', /flow acme\/b already has version "1\.0\.0"; versions are never replaced/]],
      after: ['acme/b@1.0.0'],
    },
    {
      name: 'two files naming the same flow (both, each naming the other)',
      files: {
        'a.flow.md': flowText('a'),
        'a-copy.flow.md': flowText('a', 'acme', 'other'),
        'c.flow.md': flowText('c'),
      },
      refused: [
        ['a-copy.flow.md', /flow acme\/a is also in .*\/flows\/a\.flow\.md; one deploy publishes each flow once/],
        ['a.flow.md', /flow acme\/a is also in .*\/flows\/a-copy\.flow\.md/],
      ],
    },
    {
      name: 'a file that cannot be read',
      files: { 'a.flow.md': flowText('a') },
      paths: ['.', 'missing.flow.md'],
      refused: [['missing.flow.md', /cannot read .*missing\.flow\.md: ENOENT/]],
    },
    {
      name: 'a directory with no *.flow.md',
      files: { 'a.flow.md': flowText('a'), 'empty/readme.md': 'x' },
      paths: ['.', 'empty'],
      refused: [['empty', /no \*\.flow\.md file in the directory/]],
    },
    {
      name: 'a broken file and a duplicate version together (the registry is still read to name both)',
      files: { 'a.flow.md': flowText('a'), 'b.flow.md': BROKEN },
      seed: { published: [['a', '1.0.0']] },
      refused: [
        ['a.flow.md', /already has version "1\.0\.0"/],
        ['b.flow.md', /^diagnostics: 5:BACKOFF_FACTOR_BELOW_ONE$/],
      ],
      after: ['acme/a@1.0.0'],
    },
  ];
  for (const c of table) {
    it(`refuses ${c.name}, and publishes nothing`, async () => {
      const w = workspace(c.files);
      if (c.seed !== 'none') seed(w.db, c.seed);
      const paths = (c.paths ?? ['.']).map((p) => join(w.dir, p));
      const refused = await refusalsOf(() => deployTo({ paths, version: '1.0.0', db: w.db }));
      assert.deepEqual(
        refused.map(([f]) => f),
        c.refused.map(([f]) => f),
      );
      c.refused.forEach(([, re], i) => assert.match(refused[i]![1], re));
      assert.deepEqual(versions(w.db), c.after ?? []);
    });
  }
});

describe('deployFlows publishes', () => {
  it('every *.flow.md of a directory, sorted by name, not its subfolders, in one go', async () => {
    const w = workspace({
      'c.flow.md': flowText('c'),
      'a.flow.md': flowText('a'),
      'b.flow.md': flowText('b'),
      'notes.md': 'x',
      'old/d.flow.md': flowText('d'),
    });
    seed(w.db);
    const r = await deployTo({ paths: [w.dir], version: '2.0.0', db: w.db });
    assert.equal(r.singleFile, false);
    assert.deepEqual(
      r.deployed.map((d) => `${d.tenant}/${d.flow}@${d.version}`),
      ['acme/a@2.0.0', 'acme/b@2.0.0', 'acme/c@2.0.0'],
    );
    assert.deepEqual(versions(w.db), ['acme/a@2.0.0', 'acme/b@2.0.0', 'acme/c@2.0.0']);
    withRegistry(w.db, (db) => {
      const artifacts = new SqliteArtifactsStore(db);
      for (const d of r.deployed) assert.equal(artifacts.resolveLatest('acme', d.flow)?.hash, d.hash);
    });
  });

  it('a file named twice (itself and through its directory) once', async () => {
    const w = workspace({ 'a.flow.md': flowText('a') });
    seed(w.db);
    const r = await deployTo({ paths: [join(w.dir, 'a.flow.md'), w.dir], version: '1', db: w.db });
    assert.equal(r.deployed.length, 1);
  });

  it('one file as the one-file form (singleFile), moving latest', async () => {
    const w = workspace({ 'a.flow.md': flowText('a') });
    seed(w.db, { published: [['a', '1']] });
    const r = await deployTo({ paths: [join(w.dir, 'a.flow.md')], version: '2', db: w.db });
    assert.equal(r.singleFile, true);
    withRegistry(w.db, (db) => assert.equal(new SqliteArtifactsStore(db).resolveLatest('acme', 'a')?.version, '2'));
  });
});

describe('deployFlows changes nothing when it fails', () => {
  it('a write failing on the third flow leaves the first two unpublished (one transaction)', async () => {
    const w = workspace({ 'a.flow.md': flowText('a'), 'b.flow.md': flowText('b'), 'c.flow.md': flowText('c') });
    seed(w.db);
    // A real failure inside the transaction, after a and b were written: the disk refusing the row.
    withRegistry(w.db, (db) =>
      db.exec(
        "CREATE TRIGGER refuse_c BEFORE INSERT ON flow_versions WHEN NEW.name = 'c' BEGIN SELECT RAISE(ABORT, 'disk says no'); END",
      ),
    );
    await assert.rejects(() => deployTo({ paths: [w.dir], version: '1', db: w.db }), /disk says no/);
    assert.deepEqual(versions(w.db), []);
  });

  it('a refused deploy does not create a registry that did not exist', async () => {
    const w = workspace({ 'b.flow.md': BROKEN, 'a.flow.md': flowText('a') });
    const refused = await refusalsOf(() => deployTo({ paths: [w.dir], version: '1', db: w.db }));
    assert.deepEqual(
      refused.map(([f]) => f),
      ['a.flow.md', 'b.flow.md'],
    );
    assert.match(refused[0]![1], /tenant "acme" is not registered/);
    assert.equal(existsSync(w.db), false);
  });

  it('an empty version is refused before any file is read', async () => {
    await assert.rejects(
      () => deployTo({ paths: ['/nowhere'], version: ' ', db: join(root, 'x.db') }),
      (e: unknown) => e instanceof SvcError && /must not be empty/.test(e.message),
    );
  });
});

describe('listFlowFiles', () => {
  it('takes a path that is not a directory as a file, whatever its name, and reports singleFile only for one such path', () => {
    assert.deepEqual(listFlowFiles(['x.txt']), { files: ['x.txt'], refusals: [], singleFile: true });
    assert.equal(listFlowFiles(['x.txt', 'y.txt']).singleFile, false);
    const w = workspace({ 'a.flow.md': flowText('a') });
    assert.equal(listFlowFiles([w.dir]).singleFile, false);
  });
});
