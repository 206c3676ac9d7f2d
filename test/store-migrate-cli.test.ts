/**
 * `svc store migrate`, black box: a state directory built with the svc CLI (and queue files written
 * through the queue library), copied into a fresh PostgreSQL schema by the built svc, then read
 * back with SQL and the PostgreSQL stores; a rerun, a kill -9 half-way and every refusal.
 */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pgModule from 'pg';
import { after, before, describe, it } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import { DEFAULT_RETRY_POLICY, FileQueueStore } from '../src/queue/index.js';
import { readCounter } from '../src/queue/file/id-allocator.js';
import { openStore, type PgStores } from '../src/storage/index.js';
import { startCli } from './helpers/cli-child.js';
import { adminQuery, freshPgSchema, PG_TEST_URL, type PgSchema } from './helpers/pg.js';
import { makeSandbox, startServer, svc, type CliResult, type Sandbox } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const FIXTURES = new URL('../../test/fixtures/http/', import.meta.url).pathname;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** Every copied table with the order that makes the source's and the target's listings comparable. */
const TABLES: readonly { file: 'registry' | 'audit' | 'ui'; table: string; order: string; pgOrder: string }[] = [
  { file: 'registry', table: 'tenants', order: 'id', pgOrder: 'id COLLATE "C"' },
  { file: 'registry', table: 'api_keys', order: 'id', pgOrder: 'id' },
  { file: 'registry', table: 'artifacts', order: 'hash', pgOrder: 'hash COLLATE "C"' },
  { file: 'registry', table: 'flow_latest', order: 'tenant, name', pgOrder: 'tenant COLLATE "C", name COLLATE "C"' },
  {
    file: 'registry',
    table: 'flow_sources',
    order: 'tenant, name, version',
    pgOrder: 'tenant COLLATE "C", name COLLATE "C", version COLLATE "C"',
  },
  { file: 'registry', table: 'trace_config', order: 'tenant, flow', pgOrder: 'tenant COLLATE "C", flow COLLATE "C"' },
  { file: 'audit', table: 'audit_entries', order: 'tenant, seq', pgOrder: 'tenant COLLATE "C", seq' },
  { file: 'audit', table: 'audit_heads', order: 'tenant', pgOrder: 'tenant COLLATE "C"' },
  { file: 'ui', table: 'ui_users', order: 'id', pgOrder: 'id' },
];

describe('svc store migrate', () => {
  const sandbox = makeSandbox();
  const paths = statePaths(sandbox.db);
  const schemas: PgSchema[] = [];
  let main: PgSchema;
  let first: CliResult;
  const queueIds: Record<string, number> = {};

  const ok = (args: string[], input?: string) => {
    const r = svc(sandbox, [...args, '--db', sandbox.db], { input });
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const migrate = (schema: PgSchema, from = paths.stateDir, extra: string[] = []) =>
    svc(sandbox, ['store', 'migrate', '--from', from, '--to', schema.url, ...extra]);
  const schema = async () => {
    const s = await freshPgSchema('svcmig');
    schemas.push(s);
    return s;
  };
  const pg = async <R extends Record<string, unknown>>(s: PgSchema, sql: string, params: unknown[] = []) =>
    (await adminQuery<R>(sql.replaceAll('$S', s.name), params)).rows;
  const count = async (s: PgSchema, table: string) =>
    Number((await pg<{ n: string }>(s, `SELECT count(*) AS n FROM $S.${table}`))[0]!.n);
  const schemaExists = async (s: PgSchema) =>
    (await adminQuery('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [s.name])).rows.length > 0;

  /** The source's rows, as JSON would carry them (blobs as hex, like the target's listing below). */
  function sourceRows(file: 'registry' | 'audit' | 'ui', table: string, order: string): unknown[] {
    const db = new Database(file === 'registry' ? paths.registryDb : file === 'audit' ? paths.auditDb : paths.uiDb, {
      readonly: true,
    });
    try {
      return (db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all() as Record<string, unknown>[]).map((r) =>
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [
            k,
            Buffer.isBuffer(v)
              ? `\\x${v.toString('hex')}`
              : table === 'ui_users' && k === 'disabled'
                ? v === 1
                : table === 'trace_config' && k === 'enabled'
                  ? v === 1
                  : v,
          ]),
        ),
      );
    } finally {
      db.close();
    }
  }
  const targetRows = async (s: PgSchema, table: string, order: string) =>
    (await pg<{ j: unknown }>(s, `SELECT row_to_json(t) AS j FROM $S.${table} t ORDER BY ${order}`)).map((r) => r.j);

  before(async () => {
    ok(['tenant', 'create', '--id', 'acme', '--display-name', 'Acme Corp']);
    ok(['tenant', 'create', '--id', 'globex', '--display-name', 'Globex']);
    ok(['keys', 'create', '--tenant', 'acme', '--label', 'ci', '--rate-limit', '2.5']);
    ok(['keys', 'create', '--tenant', 'acme', '--label', 'old']);
    ok(['keys', 'create', '--tenant', 'globex', '--label', 'ops', '--scopes', 'flows:run']);
    ok(['keys', 'revoke', '--id', '2']);
    ok(['deploy', '-v', '1.0.0', `${FIXTURES}echo.flow.md`]);
    ok(['deploy', '-v', '1.0.1', `${FIXTURES}echo.flow.md`]);
    ok(['deploy', '-v', '0.9.0', `${FIXTURES}header-echo.flow.md`]);
    ok(['trace', 'enable', '--tenant', 'acme', '--flow', 'echo']);
    ok(['ui', 'user', 'add', '--username', 'ops', '--role', 'sysadmin'], 'a-long-enough-password-1\n');
    ok(['ui', 'user', 'add', '--username', 'gone', '--role', 'support'], 'a-long-enough-password-2\n');
    ok(['ui', 'user', 'disable', '--username', 'gone']);

    // acme/orders: n=1 acked, n=2 waiting for a retry in an hour, n=3 dead-lettered; then 4 and 5 wait.
    const q1 = new FileQueueStore({ queuesDir: paths.queuesDir });
    for (const n of [1, 2, 3])
      queueIds[n] = (
        await q1.append('acme', 'orders', {
          correlationId: `corr-${n}`,
          payload: { n },
          traceparent: n === 2 ? TRACEPARENT : undefined,
        })
      ).id;
    const hour = { ...DEFAULT_RETRY_POLICY, initialDelayMs: 3_600_000, maxDelayMs: 3_600_000 };
    await q1.startConsumer('acme', 'orders', {
      pollIntervalMs: 10,
      handler: async (m) => {
        const n = (m.payload as { n: number }).n;
        return n === 1
          ? { kind: 'ack' }
          : n === 2
            ? { kind: 'retry', error: 'backend down', policy: hour }
            : { kind: 'dead', error: 'no such customer' };
      },
    });
    await waitFor('three outcomes', async () => {
      const s = await q1.stats('acme', 'orders');
      return s.processed === 1 && s.pending === 0 && s.retriesScheduled === 1 && s.deadLettersPending === 1
        ? s
        : undefined;
    });
    await q1.close();
    const q2 = new FileQueueStore({ queuesDir: paths.queuesDir });
    for (const n of [4, 5])
      queueIds[n] = (await q2.append('acme', 'orders', { correlationId: `corr-${n}`, payload: { n, text: 'é ✓' } })).id;
    await q2.close();

    main = await schema();
    first = migrate(main);
  });
  after(async () => {
    for (const s of schemas) await s.drop();
    sandbox.cleanup();
  });

  it('copies every table row for row: ids, hashes, instants and blobs as the state directory holds them', async () => {
    assert.equal(first.code, 0, first.stderr);
    for (const t of TABLES) {
      const src = sourceRows(t.file, t.table, t.order);
      assert.ok(src.length > 0, `the source has ${t.table} rows`);
      assert.deepEqual(await targetRows(main, t.table, t.pgOrder), src, t.table);
    }
    assert.match(first.stdout, /^ui_secret\s+copied/m);
    assert.match(first.stdout, /not copied: ui_sessions: .*log\.db/);
  });

  it('keeps the deploy order of flow versions', async () => {
    const db = new Database(paths.registryDb, { readonly: true });
    const src = db.prepare('SELECT tenant, name, version, hash, created_at FROM flow_versions ORDER BY rowid').all();
    db.close();
    assert.equal(src.length, 3);
    assert.deepEqual(
      await pg(main, 'SELECT tenant, name, version, hash, created_at FROM $S.flow_versions ORDER BY seq'),
      src,
    );
  });

  it("verifies every tenant's audit chain on PostgreSQL, and the chain goes on from its head", async () => {
    const store = (await openStore(main.url)) as PgStores;
    try {
      for (const tenant of ['acme', 'globex']) {
        const r = await store.audit.verify(tenant);
        assert.ok(r.ok, `${tenant}: ${JSON.stringify(r)}`);
        assert.ok(r.count > 0);
      }
      const before = await store.audit.count('acme');
      await store.audit.append({ tenant: 'acme', eventType: 'test.appended' });
      assert.equal((await store.audit.verify('acme')).ok, true);
      assert.equal(await store.audit.count('acme'), before + 1);
    } finally {
      await store.close();
    }
  });

  it('keeps key ids and hashes, and a new key takes an id past the copied ones', async () => {
    const store = (await openStore(main.url)) as PgStores;
    try {
      const db = new Database(paths.registryDb, { readonly: true });
      const hash = (db.prepare('SELECT key_hash FROM api_keys WHERE id = 3').get() as { key_hash: string }).key_hash;
      db.close();
      assert.equal((await store.keys.findByHash(hash))?.id, 3);
      const next = await pg<{ n: string }>(main, "SELECT nextval(pg_get_serial_sequence('$S.api_keys', 'id')) AS n");
      assert.equal(Number(next[0]!.n), 4);
      const users = await pg<{ n: string }>(main, "SELECT nextval(pg_get_serial_sequence('$S.ui_users', 'id')) AS n");
      assert.equal(Number(users[0]!.n), 3);
    } finally {
      await store.close();
    }
  });

  it('copies the waiting messages, the scheduled retry with its due time, the pending dead letter, and an id counter that never reissues an id', async () => {
    const msgs = await pg<{
      id: string;
      correlation_id: string;
      attempts: number;
      payload: string;
      traceparent: string | null;
      due_ms: string | null;
    }>(
      main,
      "SELECT id, correlation_id, attempts, payload, traceparent, due_ms FROM $S.queue_messages WHERE tenant = 'acme' AND flow = 'orders' ORDER BY id",
    );
    assert.deepEqual(
      msgs.map((m) => [
        Number(m.id),
        m.correlation_id,
        m.attempts,
        JSON.parse(m.payload),
        m.traceparent,
        m.due_ms === null,
      ]),
      [
        [queueIds[2], 'corr-2', 1, { n: 2 }, TRACEPARENT, false],
        [queueIds[4], 'corr-4', 0, { n: 4, text: 'é ✓' }, null, true],
        [queueIds[5], 'corr-5', 0, { n: 5, text: 'é ✓' }, null, true],
      ],
    );
    const due = Number(msgs[0]!.due_ms);
    assert.ok(due > Date.now() + 3_000_000 && due < Date.now() + 3_700_000, `retry due in about an hour: ${due}`);
    const dead = await pg<{ id: string; payload: string; attempts: number; last_error: string }>(
      main,
      "SELECT id, payload, attempts, last_error FROM $S.queue_dead_letters WHERE tenant = 'acme'",
    );
    assert.deepEqual(
      dead.map((d) => [Number(d.id), JSON.parse(d.payload), d.attempts, d.last_error]),
      [[queueIds[3], { n: 3 }, 1, 'no such customer']],
    );
    const head = await pg<{ next_id: string }>(
      main,
      "SELECT next_id FROM $S.queue_heads WHERE tenant = 'acme' AND flow = 'orders'",
    );
    const counter = await readCounter(`${paths.queuesDir}/acme/orders/counter.json`);
    assert.ok(counter > queueIds[5]!);
    assert.equal(Number(head[0]!.next_id), counter);
    assert.match(
      first.stdout,
      /^queue acme\/orders\s+copied\s+4\s+4\s+2 waiting, 1 retries, 1 dead letters, next id \d+/m,
    );
  });

  it('a second run copies nothing: every part is reported already done and no row is added', async () => {
    const counts = await Promise.all(
      [
        'tenants',
        'api_keys',
        'flow_versions',
        'audit_entries',
        'queue_messages',
        'queue_dead_letters',
        'registry_changes',
      ].map((t) => count(main, t)),
    );
    const again = migrate(main, paths.stateDir, ['--json']);
    assert.equal(again.code, 0, again.stderr);
    const out = JSON.parse(again.stdout) as { parts: { part: string; status: string; inserted: number }[] };
    assert.ok(out.parts.length >= 14);
    assert.deepEqual(
      out.parts.filter((p) => p.status !== 'already_done' || p.inserted !== 0),
      [],
    );
    assert.deepEqual(
      await Promise.all(
        [
          'tenants',
          'api_keys',
          'flow_versions',
          'audit_entries',
          'queue_messages',
          'queue_dead_letters',
          'registry_changes',
        ].map((t) => count(main, t)),
      ),
      counts,
    );
  });

  it('a run killed with SIGKILL half-way is finished by the next run, with the same rows as an uninterrupted one', async () => {
    const target = await schema();
    const slow: Sandbox = { ...sandbox, env: { ...sandbox.env, SVC_TEST_MIGRATE_PAUSE_MS: '300' } };
    const child = startCli(slow, ['store', 'migrate', '--from', paths.stateDir, '--to', target.url]);
    await child.waitForOutput('stderr', /copied: flow_versions/);
    await child.stop('SIGKILL');
    const done = (await pg<{ part: string }>(target, 'SELECT part FROM $S.store_imports')).map((r) => r.part);
    assert.ok(
      done.includes('flow_versions') && !done.includes('audit') && !done.includes('queue acme/orders'),
      `killed half-way: ${done.join(', ')}`,
    );
    const rerun = migrate(target);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /already done: tenants/);
    assert.match(rerun.stderr, /copied: audit/);
    for (const t of [
      ...TABLES.map((x) => x.table),
      'flow_versions',
      'queue_messages',
      'queue_dead_letters',
      'queue_heads',
    ]) {
      assert.equal(await count(target, t), (await count(main, t)) - (t === 'audit_entries' ? 1 : 0), t); // main has one entry appended above
    }
    const store = (await openStore(target.url)) as PgStores;
    assert.equal((await store.audit.verify('acme')).ok, true);
    await store.close();
  });

  it('refuses a missing state directory, writing nothing', async () => {
    const target = await schema();
    const r = migrate(target, `${sandbox.home}/nowhere`);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /refused \(source_missing\), nothing written: no state directory at/);
    assert.equal(await schemaExists(target), false);
  });

  it('refuses a target whose schema is newer than this build, writing nothing', async () => {
    const target = await schema();
    await adminQuery(
      `CREATE SCHEMA ${target.name}; CREATE TABLE ${target.name}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO ${target.name}.schema_migrations VALUES (999, 'future', now())`,
    );
    const r = migrate(target);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /refused \(target_newer\).*version 999/);
    assert.equal(
      (await adminQuery('SELECT 1 FROM information_schema.tables WHERE table_schema = $1', [target.name])).rows.length,
      1,
    );
  });

  it("refuses a target holding another installation's copy, and one holding data it never imported", async () => {
    const other = makeSandbox();
    try {
      assert.equal(
        svc(other, ['tenant', 'create', '--id', 'initech', '--display-name', 'Initech', '--db', other.db]).code,
        0,
      );
      const tenants = await count(main, 'tenants');
      const r = svc(other, ['store', 'migrate', '--from', statePaths(other.db).stateDir, '--to', main.url]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /refused \(target_other_installation\).*already holds installation inst-/);
      assert.equal(await count(main, 'tenants'), tenants);

      const born = await schema();
      const store = (await openStore(born.url)) as PgStores;
      await store.db.query(
        "INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES ('native', 'Native', 'active', '[\"api_key\"]', '2026-01-01T00:00:00Z')",
      );
      await store.close();
      const r2 = migrate(born);
      assert.equal(r2.code, 1);
      assert.match(r2.stderr, /refused \(target_other_installation\).*table tenants is not empty/);
      assert.equal(await count(born, 'store_imports'), 0);
      assert.equal(await count(born, 'api_keys'), 0);
    } finally {
      other.cleanup();
    }
  });

  it('refuses a state directory written by a newer svc, writing nothing', async () => {
    const newer = makeSandbox();
    try {
      assert.equal(
        svc(newer, ['tenant', 'create', '--id', 'initech', '--display-name', 'Initech', '--db', newer.db]).code,
        0,
      );
      const db = new Database(newer.db);
      db.prepare(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', '2030-01-01T00:00:00Z')",
      ).run();
      db.close();
      const target = await schema();
      const r = svc(newer, ['store', 'migrate', '--from', statePaths(newer.db).stateDir, '--to', target.url]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /refused \(source_newer\).*registry\.db was written by a newer svc \(schema version 99\)/);
      assert.equal(await schemaExists(target), false);
    } finally {
      newer.cleanup();
    }
  });

  it('refuses a target another migrate is writing to', async () => {
    const target = await schema();
    const holder = new pgModule.Client({ connectionString: PG_TEST_URL });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [0x5356_494d, target.name]);
      const r = migrate(target);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /refused \(target_busy\), nothing written: another svc store migrate is running against/);
      assert.equal(await schemaExists(target), false);
    } finally {
      await holder.end();
    }
  });

  it('refuses a state directory a running svc serve uses, writing nothing', async () => {
    const target = await schema();
    const server = await startServer(sandbox);
    try {
      const r = migrate(target);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        new RegExp(`refused \\(source_in_use\\).*pid ${server.child.pid} .*locks/serve-${server.child.pid}-`),
      );
      assert.equal(await schemaExists(target), false);
    } finally {
      await server.stop();
    }
    const after = migrate(target);
    assert.equal(after.code, 0, `once the server stopped: ${after.stderr}`);
  });
});
