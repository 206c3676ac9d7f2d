import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshPgSchema, type PgSchema } from '../../../helpers/pg.js';
import { SqliteAuditStore } from '../../../../src/store/sqlite/sqlite-audit-store.js';
import { openDb } from '../../../../src/store/sqlite/db.js';
import { auditMigrations } from '../../../../src/store/sqlite/migrations/audit.js';
import { appendAuditIn } from '../../../../src/store/pg/pg-audit-store.js';
import { openPgStore, type PgStore } from '../../../../src/store/pg/pg-store.js';
import {
  auditHash,
  prepareAuditEntry,
  type AuditEntryInput,
  type AuditVerifyResult,
} from '../../../../src/store/contracts/index.js';

let schema: PgSchema;
let store: PgStore;
/** Each test its own tenant, so the tests share one schema. */
let tenantNo = 0;
const freshTenant = () => `t${++tenantNo}`;

/** A fresh tenant whose chain has `n` entries. */
async function chainOf(n: number): Promise<string> {
  const tenant = freshTenant();
  for (let i = 0; i < n; i += 1) await store.audit.append({ tenant, eventType: 'e', payload: { i } });
  return tenant;
}

before(async () => {
  schema = await freshPgSchema();
  store = await openPgStore(schema.url, { maxConnections: 4 });
});
after(async () => {
  await store.close();
  await schema.drop();
});

/** Verifies `tenant`'s chain and expects it broken at `seq` for `reason`. */
async function assertBrokenAt(tenant: string, seq: number, reason: RegExp): Promise<void> {
  const r: AuditVerifyResult = await store.audit.verify(tenant);
  assert.equal(r.ok, false, 'the chain should be reported broken');
  if (r.ok) throw new Error('unreachable');
  assert.equal(r.brokenSeq, seq);
  assert.match(r.reason, reason);
}

describe('PgAuditStore', () => {
  test('the same entries appended on SQLite and on PostgreSQL get the same seqs and hashes, and read back byte for byte', async () => {
    const tenant = freshTenant();
    const other = `${tenant}-ünï 😀`;
    const odd = ['c "quoted" \\ back', 'line\nbreak\u0007', 'é 日本 😀', '\u2028', "it's"];
    const inputs: AuditEntryInput[] = odd.flatMap((s, i) => [
      {
        tenant,
        eventType: 'access.denied',
        correlationId: s,
        createdAt: `2030-01-0${i + 1}T00:00:00.000Z`,
        payload: { reason: s, n: i, nested: [1.5, null, true] },
      },
      { tenant: other, eventType: s, correlationId: `c-${i}`, createdAt: '2030-02-01T00:00:00Z', payload: s },
    ]);
    const sqlite = new SqliteAuditStore(openDb(':memory:', auditMigrations));
    const lite = [
      sqlite.append(inputs[0]!),
      ...sqlite.appendMany(inputs.slice(1, 4)),
      ...sqlite.appendPrepared(inputs.slice(4).map((e) => prepareAuditEntry(e))),
    ];
    const pg = [
      await store.audit.append(inputs[0]!),
      ...(await store.audit.appendMany(inputs.slice(1, 4))),
      ...(await store.audit.appendPrepared(inputs.slice(4).map((e) => prepareAuditEntry(e)))),
    ];
    assert.deepEqual(pg, lite);
    for (const t of [tenant, other]) {
      assert.deepEqual(await store.audit.latest(t, 100), sqlite.latest(t, 100));
      assert.deepEqual(await store.audit.verify(t), sqlite.verify(t));
    }
  });

  test('an entry altered with a recomputed hash breaks the link of the next one', async () => {
    const tenant = await chainOf(5);
    const e = (await store.audit.latest(tenant, 5))[2]!;
    await store.db.query('UPDATE audit_entries SET event_type = $1, hash = $2 WHERE tenant = $3 AND seq = 3', [
      'forged',
      auditHash({ ...e, eventType: 'forged' }),
      tenant,
    ]);
    await assertBrokenAt(tenant, 4, /prev_hash/);
  });

  test('an entry appended behind the writer’s back lies past the head', async () => {
    const tenant = await chainOf(3);
    const last = (await store.audit.latest(tenant, 1))[0]!;
    const extra = {
      tenant,
      seq: 4,
      eventType: 'forged',
      createdAt: last.createdAt,
      correlationId: 'x',
      payload: '{}',
      prevHash: last.hash,
    };
    await store.db.query('INSERT INTO audit_entries VALUES ($1, 4, $2, $3, $4, $5, $6, $7)', [
      tenant,
      'forged',
      extra.createdAt,
      'x',
      '{}',
      last.hash,
      auditHash(extra),
    ]);
    await assertBrokenAt(tenant, 4, /inserted/);
  });

  test('the last entry replaced (its head hash no longer matches) is reported at the head', async () => {
    const tenant = await chainOf(3);
    const last = (await store.audit.latest(tenant, 1))[0]!;
    const forged = { ...last, payload: '{"forged":true}' };
    await store.db.query('UPDATE audit_entries SET payload = $1, hash = $2 WHERE tenant = $3 AND seq = 3', [
      forged.payload,
      auditHash(forged),
      tenant,
    ]);
    await assertBrokenAt(tenant, 3, /replaced/);
  });

  test('with its head record gone, the next append continues from the last entry, as on SQLite', async () => {
    const tenant = await chainOf(3);
    await store.db.query('DELETE FROM audit_heads WHERE tenant = $1', [tenant]);
    assert.equal((await store.audit.append({ tenant, eventType: 'after' })).seq, 4);
    assert.equal((await store.audit.verify(tenant)).count, 4);
  });

  test('verify while other connections append reports the chain as of its start, never a false break', async () => {
    const tenant = await chainOf(1);
    let appending = true;
    const appends = Promise.all(
      Array.from({ length: 3 }, async (_, n) => {
        for (let i = 0; i < 40; i += 1)
          await store.audit.appendMany([
            { tenant, eventType: 'a', payload: { n, i } },
            { tenant, eventType: 'b', payload: { n, i } },
          ]);
      }),
    ).finally(() => (appending = false));
    const seen: number[] = [];
    while (appending) {
      const r = await store.audit.verify(tenant);
      assert.equal(r.ok, true, JSON.stringify(r));
      seen.push(r.count);
    }
    await appends;
    assert.ok(
      seen.length > 1 && seen.some((c) => c > 1 && c < 241),
      `verify should have overlapped the appends: ${seen.join(',')}`,
    );
    assert.equal((await store.audit.verify(tenant)).count, 241);
  });

  test('a batch beyond the parameter limit of one statement (9,000 entries) is appended whole', async () => {
    const tenant = freshTenant();
    const out = await store.audit.appendMany(
      Array.from({ length: 9000 }, (_, i) => ({ tenant, eventType: 'bulk', payload: { i } })),
    );
    assert.equal(out[8999]!.seq, 9000);
    assert.deepEqual(await store.audit.verify(tenant), { ok: true, tenant, count: 9000, headHash: out[8999]!.hash });
  });

  test("appendAuditIn: a state change and its entry commit together in the caller's transaction", async () => {
    const tenant = await chainOf(1);
    const made = await store.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES ($1, 'T', 'active', '["api_key"]', '2030-01-01T00:00:00Z')`,
        [tenant],
      );
      return appendAuditIn(tx, [prepareAuditEntry({ tenant, eventType: 'tenant.registered' })]);
    });
    assert.equal(made[0]!.seq, 2);
    assert.equal((await store.tenants.get(tenant))?.id, tenant);
    assert.equal((await store.audit.verify(tenant)).count, 2);
  });

  test('appendAuditIn: a rolled back transaction leaves neither the change nor the entry, and the chain goes on unbroken', async () => {
    const tenant = await chainOf(1);
    await assert.rejects(
      store.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES ($1, 'T', 'active', '["api_key"]', '2030-01-01T00:00:00Z')`,
          [tenant],
        );
        await appendAuditIn(tx, [prepareAuditEntry({ tenant, eventType: 'tenant.registered' })]);
        throw new Error('the change failed after its entry');
      }),
      /failed after its entry/,
    );
    assert.equal(await store.tenants.get(tenant), undefined);
    assert.equal(await store.audit.count(tenant), 1);
    assert.equal((await store.audit.append({ tenant, eventType: 'next' })).seq, 2);
    assert.equal((await store.audit.verify(tenant)).ok, true);
  });

  test('an append waits for a transaction holding the head and then chains after its entry', async () => {
    const tenant = await chainOf(1);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const slow = store.db.transaction(async (tx) => {
      const out = await appendAuditIn(tx, [prepareAuditEntry({ tenant, eventType: 'slow' })]);
      locked();
      await held;
      return out;
    });
    await isLocked;
    let fastDone = false;
    const fast = Promise.resolve(store.audit.append({ tenant, eventType: 'fast' })).then((e) => ((fastDone = true), e));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(fastDone, false, 'the second append should wait for the head');
    release();
    assert.equal((await slow)[0]!.seq, 2);
    assert.equal((await fast).seq, 3);
    assert.equal((await store.audit.verify(tenant)).count, 3);
  });
});
