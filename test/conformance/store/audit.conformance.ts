/**
 * The audit trail's contract (store/contracts/audit.ts), one behaviour per test, run against every
 * backend: chaining, latest and count, verify finding tampering, and one unbroken chain per tenant
 * when several connections append at once.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackendKind, StoreBackend } from './backend.js';
import { withStore } from './registry.conformance.js';
import { GENESIS_HASH, type AuditVerifyResult } from '../../../src/store/contracts/index.js';

async function fill(s: StoreBackend, tenant: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) await s.audit.append({ tenant, eventType: `event.${i + 1}`, payload: { i } });
}

function broken(result: AuditVerifyResult): { seq: number; reason: string } {
  assert.equal(result.ok, false, 'the chain should be reported broken');
  if (result.ok) throw new Error('unreachable');
  return { seq: result.brokenSeq, reason: result.reason };
}

export function auditConformance(kind: BackendKind): void {
  describe(`audit trail (${kind.name})`, () => {
    test('appends chain seq 1, 2, 3 ..., each over the previous hash, and the chain verifies', async () =>
      withStore(kind, async (s) => {
        const first = await s.audit.append({
          tenant: 'acme',
          eventType: 'tenant.registered',
          correlationId: 'c-1',
          createdAt: '2030-01-01T00:00:00Z',
          payload: { a: 1 },
        });
        assert.deepEqual(
          [first.seq, first.prevHash, first.payload, first.correlationId],
          [1, GENESIS_HASH, '{"a":1}', 'c-1'],
        );
        const more = await s.audit.appendMany([
          { tenant: 'acme', eventType: 'two' },
          { tenant: 'acme', eventType: 'three' },
        ]);
        const [p] = await s.audit.appendPrepared([]);
        assert.equal(p, undefined);
        assert.deepEqual(
          more.map((e) => e.seq),
          [2, 3],
        );
        assert.equal(more[0]!.prevHash, first.hash);
        assert.equal(more[1]!.prevHash, more[0]!.hash);
        await fill(s, 'acme', 4);
        assert.deepEqual(await s.audit.verify('acme'), {
          ok: true,
          tenant: 'acme',
          count: 7,
          headHash: (await s.audit.latest('acme', 1))[0]!.hash,
        });
      }));

    test('latest answers the newest entries, oldest of them first, as appended; count counts the chain', async () =>
      withStore(kind, async (s) => {
        await fill(s, 'acme', 12);
        await fill(s, 'beta', 2);
        const last = await s.audit.latest('acme', 3);
        assert.deepEqual(
          last.map((e) => [e.seq, e.eventType, e.payload]),
          [
            [10, 'event.10', '{"i":9}'],
            [11, 'event.11', '{"i":10}'],
            [12, 'event.12', '{"i":11}'],
          ],
        );
        assert.equal((await s.audit.latest('acme', 100)).length, 12);
        assert.equal(await s.audit.count('acme'), 12);
        assert.equal(await s.audit.count('beta'), 2);
        assert.equal(await s.audit.count('nobody'), 0);
        assert.deepEqual(await s.audit.latest('nobody', 5), []);
      }));

    test('page lists the chain newest first and pages back by seq through the whole of it', async () =>
      withStore(kind, async (s) => {
        await fill(s, 'acme', 7);
        await fill(s, 'other', 2);
        const seqs = async (q: { beforeSeq?: number; limit: number }) =>
          (await s.audit.page('acme', q)).map((e) => e.seq);
        assert.deepEqual(await seqs({ limit: 3 }), [7, 6, 5]);
        assert.deepEqual(await seqs({ beforeSeq: 5, limit: 3 }), [4, 3, 2]);
        assert.deepEqual(await seqs({ beforeSeq: 2, limit: 3 }), [1]);
        assert.deepEqual(await seqs({ beforeSeq: 1, limit: 3 }), []);
        const all: number[] = [];
        for (let before: number | undefined; ;) {
          const page = await s.audit.page('acme', { beforeSeq: before, limit: 2 });
          if (page.length === 0) break;
          all.push(...page.map((e) => e.seq));
          before = page.at(-1)!.seq;
        }
        assert.deepEqual(all, [7, 6, 5, 4, 3, 2, 1]);
        assert.deepEqual(await s.audit.page('nobody', { limit: 5 }), []);
      }));

    test('page filters by event type and by the payload actor in the store, before the limit', async () =>
      withStore(kind, async (s) => {
        await s.audit.append({ tenant: 'acme', eventType: 'trace_enabled', payload: { flow: 'f', actor: 'ui:ada' } });
        for (let i = 0; i < 30; i += 1)
          await s.audit.append({ tenant: 'acme', eventType: 'queue.message.enqueued', payload: { flow: 'f', id: i } });
        await s.audit.append({ tenant: 'acme', eventType: 'tenant.disabled', payload: { actor: 'cli' } });
        await s.audit.append({ tenant: 'acme', eventType: 'odd', payload: ['actor', 'cli'] });
        await s.audit.append({ tenant: 'acme', eventType: 'odd', payload: 'cli' });
        await s.audit.append({ tenant: 'acme', eventType: 'nested', payload: { by: { actor: 'cli' } } });
        await s.audit.append({ tenant: 'acme', eventType: 'trace_disabled', payload: { flow: 'f', actor: 'ui:ada' } });
        await s.audit.append({ tenant: 'other', eventType: 'trace_enabled', payload: { actor: 'ui:ada' } });
        const pick = async (q: { eventType?: string; actor?: string; beforeSeq?: number; limit?: number }) =>
          (await s.audit.page('acme', { limit: 5, ...q })).map((e) => `${e.seq}:${e.eventType}`);
        assert.deepEqual(await pick({ eventType: 'trace_enabled' }), ['1:trace_enabled']);
        assert.deepEqual(await pick({ actor: 'ui:ada' }), ['36:trace_disabled', '1:trace_enabled']);
        assert.deepEqual(await pick({ actor: 'cli' }), ['32:tenant.disabled']);
        assert.deepEqual(await pick({ actor: 'ui:ada', eventType: 'trace_disabled' }), ['36:trace_disabled']);
        assert.deepEqual(await pick({ actor: 'ui:ada', beforeSeq: 36 }), ['1:trace_enabled']);
        assert.deepEqual(await pick({ actor: 'nobody' }), []);
        assert.deepEqual(await pick({ eventType: 'queue.message.enqueued', limit: 2 }), [
          '31:queue.message.enqueued',
          '30:queue.message.enqueued',
        ]);
        assert.deepEqual(await s.audit.eventTypes('acme'), [
          'nested',
          'odd',
          'queue.message.enqueued',
          'tenant.disabled',
          'trace_disabled',
          'trace_enabled',
        ]);
        assert.deepEqual(await s.audit.eventTypes('nobody'), []);
      }));

    test('an empty chain verifies with count 0 and the genesis hash', async () =>
      withStore(kind, async (s) => {
        assert.deepEqual(await s.audit.verify('nobody'), {
          ok: true,
          tenant: 'nobody',
          count: 0,
          headHash: GENESIS_HASH,
        });
      }));

    test('a chain longer than one verify page verifies', async () =>
      withStore(kind, async (s) => {
        await s.audit.appendMany(
          Array.from({ length: 1203 }, (_, i) => ({ tenant: 'acme', eventType: 'e', payload: { i } })),
        );
        const r = await s.audit.verify('acme');
        assert.equal(r.ok, true);
        assert.equal(r.count, 1203);
      }));

    // Tampering behind the contract's back, and where verify must report it.
    const tampering: readonly { name: string; sql: string; seq: number; reason: RegExp }[] = [
      {
        name: 'an entry whose payload was changed is reported at its seq',
        sql: `UPDATE audit_entries SET payload = '{"i":99}' WHERE tenant = 'acme' AND seq = 3`,
        seq: 3,
        reason: /altered/,
      },
      {
        name: 'a deleted middle entry is reported as missing at its seq',
        sql: `DELETE FROM audit_entries WHERE tenant = 'acme' AND seq = 2`,
        seq: 2,
        reason: /missing/,
      },
      {
        name: 'a chain cut at its end is caught by the chain head',
        sql: `DELETE FROM audit_entries WHERE tenant = 'acme' AND seq >= 4`,
        seq: 4,
        reason: /missing/,
      },
      {
        name: 'a deleted first entry is reported as missing',
        sql: `DELETE FROM audit_entries WHERE tenant = 'acme' AND seq = 1`,
        seq: 1,
        reason: /missing/,
      },
    ];
    for (const t of tampering) {
      test(t.name, async () =>
        withStore(kind, async (s) => {
          await fill(s, 'acme', 5);
          await s.auditSql(t.sql);
          const b = broken(await s.audit.verify('acme'));
          assert.equal(b.seq, t.seq);
          assert.match(b.reason, t.reason);
        }),
      );
    }

    test('a deleted chain head record is reported', async () =>
      withStore(kind, async (s) => {
        await fill(s, 'acme', 2);
        await s.auditSql(`DELETE FROM audit_heads WHERE tenant = 'acme'`);
        assert.match(broken(await s.audit.verify('acme')).reason, /head record/);
      }));

    test('tampering with one tenant leaves the other tenants verifying', async () =>
      withStore(kind, async (s) => {
        await fill(s, 'acme', 3);
        await fill(s, 'beta', 3);
        await s.auditSql(`UPDATE audit_entries SET event_type = 'forged' WHERE tenant = 'acme' AND seq = 1`);
        assert.equal(broken(await s.audit.verify('acme')).seq, 1);
        assert.equal((await s.audit.verify('beta')).ok, true);
      }));

    test('an entry without a tenant or an event type is refused and nothing is written', async () =>
      withStore(kind, async (s) => {
        await assert.rejects(
          Promise.resolve().then(() =>
            s.audit.appendMany([
              { tenant: 'acme', eventType: 'ok' },
              { tenant: 'acme', eventType: '' },
            ]),
          ),
          { code: 'SVC_ERR_INVALID_INPUT' },
        );
        await assert.rejects(
          Promise.resolve().then(() => s.audit.append({ tenant: '', eventType: 'x' })),
          { code: 'SVC_ERR_INVALID_INPUT' },
        );
        assert.equal(await s.audit.count('acme'), 0);
      }));

    test('a batch over several tenants chains each tenant in order, across batches', async () =>
      withStore(kind, async (s) => {
        for (let round = 0; round < 3; round += 1) {
          const out = await s.audit.appendMany(
            Array.from({ length: 7 }, (_, i) => ({
              tenant: ['a', 'b', 'c'][i % 3]!,
              eventType: 'e',
              payload: { round, i },
            })),
          );
          assert.deepEqual(
            out.filter((e) => e.tenant === 'a').map((e) => e.seq),
            [1, 2, 3].map((k) => round * 3 + k),
          );
        }
        for (const [t, n] of [
          ['a', 9],
          ['b', 6],
          ['c', 6],
        ] as const)
          assert.deepEqual(await s.audit.verify(t), {
            ok: true,
            tenant: t,
            count: n,
            headHash: (await s.audit.latest(t, 1))[0]!.hash,
          });
      }));

    test('4 connections x 50 concurrent appends to one tenant make one chain: seq 1..200 without a gap', async () => {
      const handles = await kind.openShared(4);
      try {
        const made = await Promise.all(
          handles.flatMap((h, n) =>
            Array.from({ length: 50 }, (_, i) =>
              Promise.resolve().then(() => h.audit.append({ tenant: 'acme', eventType: 'storm', payload: { n, i } })),
            ),
          ),
        );
        assert.deepEqual(
          made.map((e) => e.seq).sort((a, b) => a - b),
          Array.from({ length: 200 }, (_, i) => i + 1),
        );
        const all = await handles[0]!.audit.latest('acme', 1000);
        assert.deepEqual(
          all.map((e) => e.seq),
          Array.from({ length: 200 }, (_, i) => i + 1),
        );
        assert.equal(new Set(all.map((e) => e.payload)).size, 200);
        assert.deepEqual(await handles[3]!.audit.verify('acme'), {
          ok: true,
          tenant: 'acme',
          count: 200,
          headHash: all[199]!.hash,
        });
      } finally {
        for (const h of handles) await h.close();
      }
    });

    test('two tenants appended to at once, interleaved from several connections, stay two chains', async () => {
      const handles = await kind.openShared(3);
      try {
        await Promise.all(
          handles.flatMap((h, n) =>
            Array.from({ length: 20 }, (_, i) =>
              Promise.resolve().then(() =>
                i % 4 === 3
                  ? h.audit.appendMany([
                      { tenant: 'acme', eventType: 'both', payload: { n, i } },
                      { tenant: 'beta', eventType: 'both', payload: { n, i } },
                    ])
                  : h.audit.append({ tenant: i % 2 === 0 ? 'acme' : 'beta', eventType: 'one', payload: { n, i } }),
              ),
            ),
          ),
        );
        // Per handle: acme 10 (even i) + 5 (the batches, i % 4 === 3); beta 5 (the other odd i) + 5.
        for (const [t, n] of [
          ['acme', 45],
          ['beta', 30],
        ] as const) {
          const r = await handles[1]!.audit.verify(t);
          assert.equal(r.ok, true, t);
          assert.equal(r.count, n, t);
          assert.deepEqual(
            (await handles[2]!.audit.latest(t, 100)).map((e) => e.seq),
            Array.from({ length: n }, (_, i) => i + 1),
          );
        }
      } finally {
        for (const h of handles) await h.close();
      }
    });
  });
}
