/** Black-box: `svc audit` lists and verifies the per-tenant hash chain, detects tampering, and several writers keep one chain. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openDb } from '../src/store/sqlite/db.js';
import { auditMigrations } from '../src/store/sqlite/migrations/audit.js';
import { openStore } from '../src/storage/index.js';
import { storeRows, withStore, type StoreSql } from './helpers/store-sql.js';
import { makeSandbox, onlyOn, storeArgs, svc, SVC_BIN, type CliResult, type Sandbox } from './helpers/svc.js';
import { auditHash, type AuditRow } from '../src/store/contracts/index.js';

const APPENDER = resolve(dirname(fileURLToPath(import.meta.url)), 'helpers/audit-appender.js');

/** The audit.db of a sandbox's state directory. */
const auditDbOf = (sb: Sandbox) => join(dirname(sb.db), 'audit.db');

/** Creates the audit trail of a sandbox: audit.db, or in the PostgreSQL pass the schema's tables. */
function createAuditTrail(sb: Sandbox): void {
  if (sb.store !== undefined) return withStore(sb, (db) => db.exec('SELECT 1'), 'audit');
  mkdirSync(dirname(sb.db), { recursive: true });
  openDb(auditDbOf(sb), auditMigrations).close();
}

/** Appends `count` entries to `tenant`'s chain through the store's own code (SqliteAuditStore, or PgAuditStore in the PostgreSQL pass). */
async function appendEntries(sb: Sandbox, tenant: string, count: number): Promise<void> {
  const input = { tenant, eventType: 'test.event' };
  const store = await openStore(sb.store ?? sb.db, { pg: { maxConnections: 1 } });
  try {
    for (let i = 0; i < count; i++) await store.audit.append(input);
  } finally {
    await store.close();
  }
}

/** Copies the audit trail of `from` into the empty sandbox `to`: the state directory's files, or the schema's audit tables. */
function copyAuditTrail(from: Sandbox, to: Sandbox): void {
  if (from.store !== undefined) {
    const schema = new URL(from.store).searchParams.get('schema')!;
    withStore(
      to,
      (db) => {
        db.exec(`INSERT INTO audit_entries SELECT * FROM ${schema}.audit_entries`);
        db.exec(`INSERT INTO audit_heads SELECT * FROM ${schema}.audit_heads`);
      },
      'audit',
    );
    return;
  }
  mkdirSync(dirname(to.db), { recursive: true });
  copyFileSync(from.db, to.db);
  copyFileSync(auditDbOf(from), auditDbOf(to));
}

/** Runs a node script as a child process without blocking the event loop. */
function runNode(sb: Sandbox, args: string[]): Promise<CliResult> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, args, { cwd: sb.home, env: sb.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', rej);
    child.once('exit', (code) => res({ code: code ?? -1, stdout, stderr }));
  });
}

describe('svc audit', () => {
  const sb = makeSandbox();
  const run = (...args: string[]) => svc(sb, [...args, '--db', sb.db]);

  before(() => {
    assert.equal(run('tenant', 'create', '--id', 'acme', '--display-name', 'Acme').code, 0);
    for (let i = 0; i < 2; i++) {
      assert.equal(run('tenant', 'disable', '--id', 'acme').code, 0);
      assert.equal(run('tenant', 'enable', '--id', 'acme').code, 0);
    }
  });
  after(() => sb.cleanup());

  it(
    'writes the audit database beside the registry',
    { skip: onlyOn('sqlite', 'the audit.db file of the state directory') },
    () => {
      assert.ok(existsSync(auditDbOf(sb)));
    },
  );

  it('prints seq, event_type, created_at and correlation_id of the latest entries', () => {
    const r = run('audit', '--tenant', 'acme');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /SEQ\s+EVENT_TYPE\s+CREATED_AT\s+CORRELATION_ID/);
    assert.equal(lines.length, 6);
    assert.match(lines[1]!, /^1\s+tenant\.registered\s+\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\s+[0-9a-f-]{36}$/);
    assert.match(lines[5]!, /^5\s+tenant\.enabled\s/);
  });

  it('-l N shows the newest N entries', () => {
    const r = run('audit', '--tenant', 'acme', '-l', '2');
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .filter((l) => /^\d/.test(l));
    assert.deepEqual(
      rows.map((l) => l.split(/\s+/)[0]),
      ['4', '5'],
    );
    assert.match(r.stdout, /latest 2 of 5/);
    assert.notEqual(run('audit', '--tenant', 'acme', '-l', '0').code, 0);
  });

  it('shows 20 entries by default', async () => {
    const other = makeSandbox();
    try {
      await appendEntries(other, 'busy', 25);
      const r = svc(other, ['audit', '--tenant', 'busy', '--db', other.db]);
      assert.equal(r.code, 0, r.stderr);
      const rows = r.stdout
        .trim()
        .split('\n')
        .filter((l) => /^\d/.test(l));
      assert.equal(rows.length, 20);
      assert.match(rows[0]!, /^6\s/);
      assert.match(rows[19]!, /^25\s/);
    } finally {
      other.cleanup();
    }
  });

  it('a tenant without entries has an empty, valid chain', () => {
    const r = run('audit', '--tenant', 'nobody');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /No audit entries for tenant nobody/);
    const v = run('audit', '--tenant', 'nobody', '--verify');
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout, /OK \(0 entries/);
  });

  it('refuses a --tenant that breaks the name rule', () => {
    const r = run('audit', '--tenant', 'Acme');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /tenant "Acme"/);
  });

  it('--verify reports OK with the entry count and exits 0 on an intact chain', () => {
    const r = run('audit', '--tenant', 'acme', '--verify');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /OK \(5 entries verified/);
  });

  describe('tampering with audit.db is detected by --verify (exit 1)', () => {
    /** A copy of the intact audit trail for one tamper, so each case starts from a good chain. */
    const tampered = (edit: (db: StoreSql) => void): CliResult => {
      const copy = makeSandbox();
      try {
        copyAuditTrail(sb, copy);
        withStore(copy, edit, 'audit');
        return svc(copy, ['audit', '--tenant', 'acme', '--verify', '--db', copy.db]);
      } finally {
        copy.cleanup();
      }
    };
    const rows = (db: StoreSql) =>
      db.prepare<AuditRow>(`SELECT * FROM audit_entries WHERE tenant = 'acme' ORDER BY seq`).all();

    it('an altered entry', () => {
      const r = tampered((db) =>
        db.prepare(`UPDATE audit_entries SET event_type = 'tenant.enabled' WHERE tenant = 'acme' AND seq = 2`).run(),
      );
      assert.equal(r.code, 1);
      assert.match(r.stdout, /BROKEN at seq 2/);
      assert.match(r.stdout, /altered/);
    });

    it('an altered payload', () => {
      const r = tampered((db) =>
        db.prepare(`UPDATE audit_entries SET payload = '{}' WHERE tenant = 'acme' AND seq = 4`).run(),
      );
      assert.equal(r.code, 1);
      assert.match(r.stdout, /BROKEN at seq 4/);
    });

    it('an entry altered with its own hash recomputed', () => {
      const r = tampered((db) => {
        const e = rows(db)[2]!;
        const forged = {
          tenant: e.tenant,
          seq: e.seq,
          eventType: 'tenant.forged',
          createdAt: e.created_at,
          correlationId: e.correlation_id,
          payload: e.payload,
          prevHash: e.prev_hash,
        };
        db.prepare(`UPDATE audit_entries SET event_type = ?, hash = ? WHERE tenant = 'acme' AND seq = 3`).run(
          'tenant.forged',
          auditHash(forged),
        );
      });
      assert.equal(r.code, 1);
      assert.match(r.stdout, /BROKEN at seq 4/);
      assert.match(r.stdout, /prev_hash/);
    });

    it('a deleted entry in the middle', () => {
      const r = tampered((db) => db.prepare(`DELETE FROM audit_entries WHERE tenant = 'acme' AND seq = 3`).run());
      assert.equal(r.code, 1);
      assert.match(r.stdout, /BROKEN at seq 3/);
      assert.match(r.stdout, /missing/);
    });

    it('a deleted last entry', () => {
      const r = tampered((db) => db.prepare(`DELETE FROM audit_entries WHERE tenant = 'acme' AND seq = 5`).run());
      assert.equal(r.code, 1);
      assert.match(r.stdout, /BROKEN at seq 5/);
    });

    it('an entry inserted in the middle, renumbering those after it', () => {
      const r = tampered((db) => {
        const all = rows(db);
        // Highest first, so no renumbered seq meets one not yet moved.
        for (const e of [...all].reverse().filter((x) => x.seq >= 3)) {
          db.prepare(`UPDATE audit_entries SET seq = ? WHERE tenant = 'acme' AND seq = ?`).run(e.seq + 1, e.seq);
        }
        const prev = all[1]!;
        const forged = {
          tenant: 'acme',
          seq: 3,
          eventType: 'tenant.enabled',
          createdAt: prev.created_at,
          correlationId: 'forged',
          payload: '{}',
          prevHash: prev.hash,
        };
        db.prepare('INSERT INTO audit_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
          'acme',
          3,
          forged.eventType,
          forged.createdAt,
          forged.correlationId,
          forged.payload,
          forged.prevHash,
          auditHash(forged),
        );
      });
      assert.equal(r.code, 1);
      assert.match(r.stdout, /BROKEN at seq 4/);
    });

    it('an entry appended at the end behind the writer’s back', () => {
      const r = tampered((db) => {
        const last = rows(db).at(-1)!;
        const forged = {
          tenant: 'acme',
          seq: 6,
          eventType: 'tenant.disabled',
          createdAt: last.created_at,
          correlationId: 'forged',
          payload: '{}',
          prevHash: last.hash,
        };
        db.prepare('INSERT INTO audit_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
          'acme',
          6,
          forged.eventType,
          forged.createdAt,
          'forged',
          '{}',
          last.hash,
          auditHash(forged),
        );
      });
      assert.equal(r.code, 1);
      assert.match(r.stdout, /BROKEN at seq 6/);
      assert.match(r.stdout, /inserted/);
    });

    it('the untouched copy still verifies (the harness itself breaks nothing)', () => {
      const r = tampered(() => {});
      assert.equal(r.code, 0, r.stdout + r.stderr);
    });
  });

  describe('several processes appending to one chain at once', () => {
    it('three processes (two one-per-transaction, one batching writer) leave one unbroken chain', async (t) => {
      const other = makeSandbox();
      try {
        createAuditTrail(other);
        // The appenders write through the store's own code: audit.db, or the schema of the store URL.
        const target = other.store ?? auditDbOf(other);
        const barrier = join(other.home, 'barrier');
        mkdirSync(barrier);
        const results = await Promise.all([
          runNode(other, [APPENDER, target, 'shared', '150', 'sync', 'p1', barrier, '3']),
          runNode(other, [APPENDER, target, 'shared', '150', 'sync', 'p2', barrier, '3']),
          runNode(other, [APPENDER, target, 'shared', '300', 'writer', 'p3', barrier, '3']),
        ]);
        for (const r of results) assert.equal(r.code, 0, r.stderr);
        const v = svc(other, ['audit', '--tenant', 'shared', '--verify', '--db', other.db]);
        assert.equal(v.code, 0, v.stdout + v.stderr);
        assert.match(v.stdout, /OK \(600 entries verified/);
        const label = other.store === undefined ? "json_extract(payload, '$.label')" : "payload::json->>'label'";
        const labels = storeRows(
          other,
          'audit',
          `SELECT ${label} AS label, COUNT(*) AS n FROM audit_entries GROUP BY label ORDER BY label`,
        );
        assert.deepEqual(labels, [
          { label: 'p1', n: 150 },
          { label: 'p2', n: 150 },
          { label: 'p3', n: 300 },
        ]);
        const runs = storeRows<{ label: string }>(
          other,
          'audit',
          `SELECT ${label} AS label FROM audit_entries ORDER BY seq`,
        );
        const switches = runs.filter((r, i) => i > 0 && r.label !== runs[i - 1]!.label).length;
        // On a loaded machine the writers may happen not to overlap; the chain must verify either way.
        if (switches <= 2)
          t.diagnostic(`the writers barely interleaved (${switches} switches); the chain check above still holds`);
      } finally {
        other.cleanup();
      }
    });

    it('two svc processes cycling one tenant disable/enable keep the chain and the state table consistent', async () => {
      const other = makeSandbox();
      try {
        assert.equal(
          svc(other, ['tenant', 'create', '--id', 'race', '--display-name', 'Race', '--db', other.db]).code,
          0,
        );
        const cycle = async () => {
          for (let i = 0; i < 6; i++) {
            for (const verb of ['disable', 'enable']) {
              const r = await runNode(other, [
                SVC_BIN,
                ...storeArgs(['tenant', verb, '--id', 'race', '--db', other.db]),
              ]);
              assert.equal(r.code, 0, r.stderr);
            }
          }
        };
        await Promise.all([cycle(), cycle()]);
        const v = svc(other, ['audit', '--tenant', 'race', '--verify', '--db', other.db]);
        assert.equal(v.code, 0, v.stdout + v.stderr);
        const entries = JSON.parse(
          svc(other, ['audit', '--tenant', 'race', '--json', '-l', '1000', '--db', other.db]).stdout,
        ) as { seq: number; event_type: string }[];
        assert.equal(entries[0]!.event_type, 'tenant.registered');
        // Every entry records a real transition, so after registration they must alternate.
        entries
          .slice(1)
          .forEach((e, i) =>
            assert.equal(e.event_type, i % 2 === 0 ? 'tenant.disabled' : 'tenant.enabled', `seq ${e.seq}`),
          );
        assert.ok(entries.length >= 13, `expected at least 12 transitions, got ${entries.length - 1}`);
      } finally {
        other.cleanup();
      }
    });
  });
});
