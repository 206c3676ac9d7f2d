import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { SqliteAuditStore } from './sqlite-audit-store.js';
import { openDb, type Db } from './db.js';
import { auditMigrations } from './migrations/audit.js';
import { auditHash, GENESIS_HASH, prepareAuditEntry, type AuditVerifyResult } from '../contracts/index.js';

function setup(): { db: Db; audit: SqliteAuditStore } {
  const db = openDb(':memory:', auditMigrations);
  return { db, audit: new SqliteAuditStore(db) };
}

function fill(audit: SqliteAuditStore, tenant: string, n: number): void {
  for (let i = 0; i < n; i++) audit.append({ tenant, eventType: `event.${i + 1}`, payload: { i } });
}

function broken(result: AuditVerifyResult): { seq: number; reason: string } {
  assert.equal(result.ok, false, 'the chain should be reported broken');
  if (result.ok) throw new Error('unreachable');
  return { seq: result.brokenSeq, reason: result.reason };
}

describe('SqliteAuditStore', () => {
  it('chains entries per tenant: seq 1, 2, 3 and each prev_hash is the previous hash', () => {
    const { audit } = setup();
    fill(audit, 'acme', 3);
    fill(audit, 'beta', 2);
    const acme = audit.latest('acme', 10);
    assert.deepEqual(
      acme.map((e) => e.seq),
      [1, 2, 3],
    );
    assert.equal(acme[0]!.prevHash, GENESIS_HASH);
    assert.equal(acme[1]!.prevHash, acme[0]!.hash);
    assert.equal(acme[2]!.prevHash, acme[1]!.hash);
    assert.deepEqual(
      audit.latest('beta', 10).map((e) => e.seq),
      [1, 2],
    );
  });

  it('hashes the canonical encoding of the seven fields', () => {
    const { audit } = setup();
    const e = audit.append({
      tenant: 'acme',
      eventType: 'tenant.registered',
      correlationId: 'c-1',
      createdAt: '2030-01-01T00:00:00Z',
      payload: { a: 1 },
    });
    assert.equal(e.payload, '{"a":1}');
    const expected = createHash('sha256')
      .update(JSON.stringify(['acme', 1, 'tenant.registered', '2030-01-01T00:00:00Z', 'c-1', '{"a":1}', GENESIS_HASH]))
      .digest('hex');
    assert.equal(e.hash, expected);
    assert.equal(auditHash(e), expected);
  });

  it('hashes exactly JSON.stringify of the seven fields whatever the strings hold', () => {
    const { audit } = setup();
    // (A lone surrogate cannot be stored as UTF-8 at all; no door produces one in these fields.)
    for (const odd of ['c "quoted" \\ back', 'line\nbreak\u0007', 'é 日本 😀', '\u2028']) {
      const e = audit.append({
        tenant: 'acme',
        eventType: 'access.denied',
        correlationId: odd,
        payload: { reason: odd },
      });
      const canonical = JSON.stringify([
        e.tenant,
        e.seq,
        e.eventType,
        e.createdAt,
        e.correlationId,
        e.payload,
        e.prevHash,
      ]);
      assert.equal(e.hash, createHash('sha256').update(canonical).digest('hex'), odd);
    }
    assert.equal(audit.verify('acme').ok, true);
  });

  it('gives an entry without a correlation id a fresh UUID v4', () => {
    const a = prepareAuditEntry({ tenant: 't', eventType: 'x' });
    const b = prepareAuditEntry({ tenant: 't', eventType: 'x' });
    assert.match(a.correlationId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(a.correlationId, b.correlationId);
    assert.equal(a.payload, '{}');
  });

  it('shows the newest entries, oldest of them first', () => {
    const { audit } = setup();
    fill(audit, 'acme', 25);
    assert.deepEqual(
      audit.latest('acme', 3).map((e) => e.seq),
      [23, 24, 25],
    );
    assert.equal(audit.count('acme'), 25);
  });

  it('verifies an intact chain (longer than one verify page) and an empty one', () => {
    const { audit } = setup();
    fill(audit, 'acme', 1203);
    const r = audit.verify('acme');
    assert.equal(r.ok, true);
    assert.equal(r.count, 1203);
    assert.deepEqual(audit.verify('nobody'), { ok: true, tenant: 'nobody', count: 0, headHash: GENESIS_HASH });
  });

  it('a batch of many entries over several tenants chains each tenant unbroken, across batches', () => {
    const { audit } = setup();
    for (let round = 0; round < 3; round++) {
      audit.appendMany(
        Array.from({ length: 37 }, (_, i) => ({
          tenant: ['a', 'b', 'c'][i % 3]!,
          eventType: 'e',
          payload: { round, i },
        })),
      );
    }
    for (const t of ['a', 'b', 'c']) {
      const r = audit.verify(t);
      assert.equal(r.ok, true, t);
      assert.equal(r.count, t === 'a' ? 39 : 36);
    }
  });

  it('appendMany writes all entries in one transaction, in order', () => {
    const { audit } = setup();
    const out = audit.appendMany([
      { tenant: 'a', eventType: 'one' },
      { tenant: 'b', eventType: 'two' },
      { tenant: 'a', eventType: 'three' },
    ]);
    assert.deepEqual(
      out.map((e) => [e.tenant, e.seq]),
      [
        ['a', 1],
        ['b', 1],
        ['a', 2],
      ],
    );
    assert.equal(audit.verify('a').ok, true);
    assert.equal(audit.verify('b').ok, true);
  });

  describe('tampering', () => {
    it('an altered payload breaks the chain at that seq', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 5);
      db.prepare(`UPDATE audit_entries SET payload = '{"i":99}' WHERE tenant = 'acme' AND seq = 3`).run();
      const b = broken(audit.verify('acme'));
      assert.equal(b.seq, 3);
      assert.match(b.reason, /altered/);
    });

    it('an entry altered with a recomputed hash breaks the link of the next one', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 5);
      const e = audit.latest('acme', 5)[2]!;
      const forged = { ...e, eventType: 'forged' };
      db.prepare(`UPDATE audit_entries SET event_type = ?, hash = ? WHERE tenant = 'acme' AND seq = 3`).run(
        'forged',
        auditHash(forged),
      );
      const b = broken(audit.verify('acme'));
      assert.equal(b.seq, 4);
      assert.match(b.reason, /prev_hash/);
    });

    it('a deleted middle entry is reported as missing', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 5);
      db.prepare(`DELETE FROM audit_entries WHERE tenant = 'acme' AND seq = 2`).run();
      const b = broken(audit.verify('acme'));
      assert.equal(b.seq, 2);
      assert.match(b.reason, /missing/);
    });

    it('a deleted first entry is reported as missing', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 3);
      db.prepare(`DELETE FROM audit_entries WHERE tenant = 'acme' AND seq = 1`).run();
      assert.equal(broken(audit.verify('acme')).seq, 1);
    });

    it('deleted last entries are caught by the chain head', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 5);
      db.prepare(`DELETE FROM audit_entries WHERE tenant = 'acme' AND seq >= 4`).run();
      const b = broken(audit.verify('acme'));
      assert.equal(b.seq, 4);
      assert.match(b.reason, /missing/);
    });

    it('a whole deleted chain is caught by the chain head', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 2);
      db.prepare(`DELETE FROM audit_entries WHERE tenant = 'acme'`).run();
      assert.equal(broken(audit.verify('acme')).seq, 1);
    });

    it('a deleted chain head record is reported', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 2);
      db.prepare(`DELETE FROM audit_heads WHERE tenant = 'acme'`).run();
      assert.match(broken(audit.verify('acme')).reason, /head record/);
    });

    it('an entry appended behind the writer’s back is past the head', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 3);
      const last = audit.latest('acme', 1)[0]!;
      const extra = {
        tenant: 'acme',
        seq: 4,
        eventType: 'forged',
        createdAt: last.createdAt,
        correlationId: 'x',
        payload: '{}',
        prevHash: last.hash,
      };
      db.prepare('INSERT INTO audit_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
        'acme',
        4,
        'forged',
        extra.createdAt,
        'x',
        '{}',
        last.hash,
        auditHash(extra),
      );
      const b = broken(audit.verify('acme'));
      assert.equal(b.seq, 4);
      assert.match(b.reason, /inserted/);
    });

    it('an entry inserted between two others breaks the chain', () => {
      const { db, audit } = setup();
      fill(audit, 'acme', 4);
      db.prepare(
        `INSERT INTO audit_entries VALUES ('acme', 2.5, 'forged', '2030-01-01T00:00:00Z', 'x', '{}', ?, ?)`,
      ).run(GENESIS_HASH, GENESIS_HASH);
      const b = broken(audit.verify('acme'));
      assert.equal(b.seq, 2.5);
      assert.match(b.reason, /inserted/);
    });
  });

  it('keeps appending after the head of another process moved (head read inside the transaction)', () => {
    const db = openDb(':memory:', auditMigrations);
    const one = new SqliteAuditStore(db);
    const two = new SqliteAuditStore(db);
    one.append({ tenant: 'acme', eventType: 'a' });
    two.append({ tenant: 'acme', eventType: 'b' });
    one.append({ tenant: 'acme', eventType: 'c' });
    assert.equal(one.verify('acme').count, 3);
  });

  describe('the acknowledgement of a queued message is chained once, whoever chains it again', () => {
    const receipt = (tenant: string, flow: string, id: number, source = 'enqueue') =>
      prepareAuditEntry({ tenant, eventType: 'queue.message.enqueued', payload: { flow, id, offset: 0, source } });
    const enqueuedIds = (audit: SqliteAuditStore, tenant: string) =>
      audit
        .entriesOfTypes(tenant, ['queue.message.enqueued'], 0, 100)
        .map((e) => JSON.parse(e.payload) as { flow: string; id: number })
        .map((p) => `${p.flow}#${p.id}`);

    it('in one batch, across batches, and on every path that chains (writer, spool recovery, CLI)', () => {
      const { audit } = setup();
      audit.appendPrepared([receipt('acme', 'orders', 1), receipt('acme', 'orders', 1), receipt('acme', 'orders', 2)]);
      audit.appendMarked([receipt('acme', 'orders', 2), receipt('acme', 'orders', 3)], [{ spool: 's1', seq: 2 }]);
      audit.chainSpooled('s2', () => [
        { seq: 1, entry: receipt('acme', 'orders', 3) },
        { seq: 2, entry: receipt('acme', 'orders', 4) },
      ]);
      assert.throws(
        () => audit.append({ tenant: 'acme', eventType: 'queue.message.enqueued', payload: { flow: 'orders', id: 4 } }),
        (err: Error & { code?: string }) => err.code === 'SVC_ERR_CONFLICT',
      );
      assert.deepEqual(enqueuedIds(audit, 'acme'), ['orders#1', 'orders#2', 'orders#3', 'orders#4']);
      const v = audit.verify('acme');
      assert.equal(v.ok, true);
      assert.equal(v.count, 4, 'the skipped entries took no seq: the chain has no gap');
    });

    it('the same id in another flow or tenant is another message', () => {
      const { audit } = setup();
      audit.appendPrepared([
        receipt('acme', 'orders', 1),
        receipt('acme', 'invoices', 1),
        receipt('beta', 'orders', 1),
      ]);
      assert.deepEqual(enqueuedIds(audit, 'acme'), ['orders#1', 'invoices#1']);
      assert.deepEqual(enqueuedIds(audit, 'beta'), ['orders#1']);
    });

    it('other entries are never skipped, nor an enqueued entry that names no message', () => {
      const { audit } = setup();
      const processed = prepareAuditEntry({
        tenant: 'acme',
        eventType: 'queue.message.processed',
        payload: { flow: 'orders', id: 1 },
      });
      const nameless = prepareAuditEntry({ tenant: 'acme', eventType: 'queue.message.enqueued', payload: { id: 'x' } });
      audit.appendPrepared([processed, processed, nameless, nameless, { ...nameless, payload: 'not json' }]);
      assert.equal(audit.count('acme'), 5);
    });

    it('a skipped entry is not counted as chained, and moves its spool mark with its batch', () => {
      const { db, audit } = setup();
      audit.appendPrepared([receipt('acme', 'orders', 7)]);
      const spooled = [
        { seq: 1, entry: receipt('acme', 'orders', 7) },
        { seq: 2, entry: receipt('acme', 'orders', 8) },
      ];
      assert.equal(
        audit.chainSpooled('s1', () => spooled),
        1,
      );
      assert.equal(
        (db.prepare("SELECT seq FROM audit_spool_marks WHERE spool = 's1'").get() as { seq: number }).seq,
        2,
      );
      assert.equal(audit.count('acme'), 2);
    });
  });
});
