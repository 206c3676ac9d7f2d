/**
 * The certificate registry's contract (store/sqlite/sqlite-certificates-store.ts), one behaviour per test, run
 * against every backend: one current entry per (tenant, name), replaced atomically, and the
 * once-per-interval task claim.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackendKind, StoreBackend } from './backend.js';
import { withShared, withStore } from './registry.conformance.js';
import type { NewCertificate } from '../../../src/store/contracts/index.js';

const T0 = '2026-01-02T03:04:05.000Z';
const T1 = '2026-02-01T00:00:00.000Z';

const cert = (tenant: string, name: string, extra: Partial<NewCertificate> = {}): NewCertificate => ({
  tenant,
  name,
  kind: 'client_cert',
  subject: `CN=${name}`,
  issuer: 'CN=Test CA',
  serial: '01',
  validFrom: '2026-01-01T00:00:00.000Z',
  validTo: '2027-01-01T00:00:00.000Z',
  sha256: 'AB:CD',
  pem: `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`,
  createdAt: T0,
  ...extra,
});

/** Certificates belong to a registered tenant. */
async function tenant(s: StoreBackend, id: string): Promise<void> {
  await s.tenants.create({ id, displayName: id, authMethods: ['mtls'], createdAt: T0 });
}

export function certificatesConformance(kind: BackendKind): void {
  describe(`certificates (${kind.name})`, () => {
    test('add returns the stored current entry; found by id and as the current one', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        const a = await s.certificates.add(cert('acme', 'bank', { kind: 'server_cert', serial: '0A' }));
        assert.ok(a !== undefined);
        assert.equal(typeof a.id, 'number');
        assert.deepEqual(a, {
          id: a.id,
          ...cert('acme', 'bank', { kind: 'server_cert', serial: '0A' }),
          status: 'current',
          replacedAt: null,
        });
        assert.deepEqual(await s.certificates.byId(a.id), a);
        assert.deepEqual(await s.certificates.current('acme', 'bank'), a);
      }));

    test('an unknown id, name or tenant finds nothing', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        const a = (await s.certificates.add(cert('acme', 'bank')))!;
        assert.equal(await s.certificates.byId(a.id + 1000), undefined);
        assert.equal(await s.certificates.current('acme', 'other'), undefined);
        assert.equal(await s.certificates.current('other', 'bank'), undefined);
        assert.deepEqual(await s.certificates.history('acme', 'other'), []);
        assert.deepEqual(await s.certificates.list('other'), []);
      }));

    test('a second add of a name that has a current entry is undefined and changes nothing', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        await tenant(s, 'beta');
        const a = (await s.certificates.add(cert('acme', 'bank')))!;
        assert.equal(await s.certificates.add(cert('acme', 'bank', { serial: '02' })), undefined);
        assert.deepEqual(await s.certificates.current('acme', 'bank'), a);
        assert.deepEqual(await s.certificates.history('acme', 'bank'), [a]);
        // The same name of another tenant, or another name, is a separate entry.
        assert.ok((await s.certificates.add(cert('beta', 'bank'))) !== undefined);
        assert.ok((await s.certificates.add(cert('acme', 'bank2'))) !== undefined);
      }));

    test('a certificate of an unregistered tenant is refused', async () =>
      withStore(kind, async (s) => {
        await assert.rejects(Promise.resolve().then(() => s.certificates.add(cert('ghost', 'bank'))));
        assert.deepEqual(await s.certificates.list(), []);
      }));

    test('replace retires the current entry and adds the new one; history is newest first', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        const a = (await s.certificates.add(cert('acme', 'bank')))!;
        const out = await s.certificates.replace(cert('acme', 'bank', { serial: '02', createdAt: T1 }), T1);
        assert.ok(out !== undefined);
        assert.deepEqual(out.retired, { ...a, status: 'replaced', replacedAt: T1 });
        assert.deepEqual(out.current, {
          id: out.current.id,
          ...cert('acme', 'bank', { serial: '02', createdAt: T1 }),
          status: 'current',
          replacedAt: null,
        });
        assert.ok(out.current.id > a.id);
        assert.deepEqual(await s.certificates.current('acme', 'bank'), out.current);
        assert.deepEqual(await s.certificates.history('acme', 'bank'), [out.current, out.retired]);
      }));

    test('replace without a current entry is undefined and adds nothing', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        assert.equal(await s.certificates.replace(cert('acme', 'bank'), T1), undefined);
        assert.deepEqual(await s.certificates.history('acme', 'bank'), []);
      }));

    test('list: soonest expiry first, then tenant and name in byte order; of one tenant or all', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        await tenant(s, 'Beta');
        await s.certificates.add(cert('acme', 'late', { validTo: '2028-01-01T00:00:00.000Z' }));
        await s.certificates.add(cert('acme', 'b', { validTo: '2027-01-01T00:00:00.000Z' }));
        await s.certificates.add(cert('acme', 'B', { validTo: '2027-01-01T00:00:00.000Z' }));
        await s.certificates.add(cert('Beta', 'z', { validTo: '2027-01-01T00:00:00.000Z' }));
        await s.certificates.add(cert('acme', 'soon', { validTo: '2026-06-01T00:00:00.000Z' }));
        await s.certificates.replace(cert('acme', 'soon', { validTo: '2026-09-01T00:00:00.000Z' }), T1);
        const names = (rows: { tenant: string; name: string; status: string }[]) =>
          rows.map((r) => `${r.tenant}/${r.name}/${r.status}`);
        assert.deepEqual(names(await s.certificates.list()), [
          'acme/soon/replaced',
          'acme/soon/current',
          'Beta/z/current',
          'acme/B/current',
          'acme/b/current',
          'acme/late/current',
        ]);
        assert.deepEqual(names(await s.certificates.list('acme')), [
          'acme/soon/replaced',
          'acme/soon/current',
          'acme/B/current',
          'acme/b/current',
          'acme/late/current',
        ]);
      }));

    test('adds of one name racing from two connections: exactly one gets an entry', async () =>
      withShared(kind, 2, async (handles) => {
        await tenant(handles[0]!, 'acme');
        const outcomes = await Promise.all(
          handles.flatMap((h, i) =>
            [0, 1, 2].map((j) =>
              Promise.resolve().then(() => h.certificates.add(cert('acme', 'bank', { serial: `${i}${j}` }))),
            ),
          ),
        );
        assert.equal(outcomes.filter((o) => o !== undefined).length, 1);
        const history = await handles[1]!.certificates.history('acme', 'bank');
        assert.equal(history.length, 1);
        assert.deepEqual(
          history[0],
          outcomes.find((o) => o !== undefined),
        );
      }));

    test('replaces racing from several connections build one chain with exactly one current entry', async () =>
      withShared(kind, 3, async (handles) => {
        await tenant(handles[0]!, 'acme');
        const first = (await handles[0]!.certificates.add(cert('acme', 'bank')))!;
        const outcomes = await Promise.all(
          handles.flatMap((h, i) =>
            [0, 1].map((j) =>
              Promise.resolve().then(() => h.certificates.replace(cert('acme', 'bank', { serial: `${i}${j}` }), T1)),
            ),
          ),
        );
        // Each replace found a current entry (the one before it), so every one of them succeeded.
        assert.ok(outcomes.every((o) => o !== undefined));
        const history = await handles[0]!.certificates.history('acme', 'bank');
        assert.equal(history.length, 1 + outcomes.length);
        const current = history.filter((r) => r.status === 'current');
        assert.equal(current.length, 1);
        // One chain: every entry but the last is retired exactly once, by one replace.
        const retired = outcomes.map((o) => o!.retired.id).sort((a, b) => a - b);
        const expected = history
          .filter((r) => r.id !== current[0]!.id)
          .map((r) => r.id)
          .sort((a, b) => a - b);
        assert.deepEqual(retired, expected);
        assert.ok(retired.includes(first.id));
        assert.deepEqual(await handles[2]!.certificates.current('acme', 'bank'), current[0]);
      }));
  });

  describe(`task runs (${kind.name})`, () => {
    test('the first claim wins; another within the interval loses; one after it wins again', async () =>
      withStore(kind, async (s) => {
        assert.equal(await s.certificates.claimTaskRun('sweep', 1_000_000, 60_000), true);
        assert.equal(await s.certificates.claimTaskRun('sweep', 1_059_999, 60_000), false);
        assert.equal(await s.certificates.claimTaskRun('sweep', 1_060_000, 60_000), true);
        // A lost claim does not move the last run.
        assert.equal(await s.certificates.claimTaskRun('sweep', 1_100_000, 60_000), false);
        assert.equal(await s.certificates.claimTaskRun('sweep', 1_120_000, 60_000), true);
      }));

    test('tasks are claimed separately; a fractional interval is honoured', async () =>
      withStore(kind, async (s) => {
        assert.equal(await s.certificates.claimTaskRun('a', 1_000_000, 54_000.5), true);
        assert.equal(await s.certificates.claimTaskRun('b', 1_000_000, 54_000.5), true);
        assert.equal(await s.certificates.claimTaskRun('a', 1_054_000, 54_000.5), false);
        assert.equal(await s.certificates.claimTaskRun('a', 1_054_001, 54_000.5), true);
      }));

    test('claims racing from three connections: exactly one wins per interval', async () =>
      withShared(kind, 3, async (handles) => {
        for (const nowMs of [1_000_000, 1_030_000, 1_060_000, 1_120_000]) {
          const outcomes = await Promise.all(
            handles.flatMap((h) =>
              [h, h].map((x) => Promise.resolve().then(() => x.certificates.claimTaskRun('sweep', nowMs, 60_000))),
            ),
          );
          assert.equal(outcomes.filter((o) => o).length, nowMs === 1_030_000 ? 0 : 1, `claims at ${nowMs}`);
        }
      }));
  });
}
