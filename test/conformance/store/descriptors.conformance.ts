/**
 * The protobuf descriptor registry's contract (store/contracts/descriptors.ts), one behaviour per test,
 * run against every backend: versions never replaced, the latest pointer, the tenant's status.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Hex } from '../../../src/common/digest.js';
import type { BackendKind } from './backend.js';
import { withShared, withStore } from './registry.conformance.js';
import type { NewDescriptor } from '../../../src/store/contracts/index.js';

const T0 = '2026-01-02T03:04:05.000Z';
const T1 = '2026-01-03T00:00:00.000Z';
const T2 = '2026-01-04T00:00:00.000Z';

const descriptor = (
  tenant: string,
  name: string,
  version: string,
  extra: Partial<NewDescriptor> = {},
): NewDescriptor => {
  const bytes = extra.bytes ?? Buffer.from([0x0a, 0x00, 0xff, ...Buffer.from(`${name}@${version}`)]);
  return { tenant, name, version, hash: sha256Hex(bytes), bytes, deployedAt: T0, makeLatest: true, ...extra };
};

/** A rejection's SvcError code. */
const codeOf = (r: PromiseSettledResult<unknown>): string | undefined =>
  r.status === 'rejected' ? (r.reason as { code?: string }).code : undefined;

export function descriptorsConformance(kind: BackendKind): void {
  describe(`descriptors (${kind.name})`, () => {
    test('tenantStatus reads the tenant registry: undefined, active, then disabled', async () =>
      withStore(kind, async (s) => {
        assert.equal(await s.descriptors.tenantStatus('acme'), undefined);
        await s.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: T0 });
        assert.equal(await s.descriptors.tenantStatus('acme'), 'active');
        await s.tenants.setStatus('acme', 'disabled');
        assert.equal(await s.descriptors.tenantStatus('acme'), 'disabled');
      }));

    test('insert with makeLatest stores the bytes and moves the latest pointer', async () =>
      withStore(kind, async (s) => {
        const v1 = descriptor('acme', 'orders', '1');
        await s.descriptors.insert(v1);
        assert.equal(await s.descriptors.latestVersion('acme', 'orders'), '1');
        const got = await s.descriptors.get('acme', 'orders');
        assert.deepEqual(got, {
          tenant: 'acme',
          name: 'orders',
          version: '1',
          hash: v1.hash,
          sizeBytes: v1.bytes.length,
          deployedAt: T0,
          latest: true,
          bytes: v1.bytes,
        });
        assert.ok(Buffer.isBuffer(got?.bytes));
        await s.descriptors.insert(descriptor('acme', 'orders', '2', { deployedAt: T1 }));
        assert.equal(await s.descriptors.latestVersion('acme', 'orders'), '2');
        assert.equal((await s.descriptors.get('acme', 'orders', '1'))?.latest, false);
      }));

    test('insert without makeLatest leaves the pointer where it was, or unset', async () =>
      withStore(kind, async (s) => {
        await s.descriptors.insert(descriptor('acme', 'orders', '1', { makeLatest: false }));
        assert.equal(await s.descriptors.latestVersion('acme', 'orders'), undefined);
        assert.equal(await s.descriptors.get('acme', 'orders'), undefined);
        assert.equal((await s.descriptors.get('acme', 'orders', '1'))?.latest, false);
        await s.descriptors.insert(descriptor('acme', 'orders', '2'));
        await s.descriptors.insert(descriptor('acme', 'orders', '3', { makeLatest: false }));
        assert.equal(await s.descriptors.latestVersion('acme', 'orders'), '2');
        assert.equal((await s.descriptors.get('acme', 'orders'))?.version, '2');
      }));

    test('a published version is refused (SVC_ERR_CONFLICT) and nothing changes', async () =>
      withStore(kind, async (s) => {
        const v1 = descriptor('acme', 'orders', '1');
        await s.descriptors.insert(v1);
        await s.descriptors.insert(descriptor('acme', 'orders', '2'));
        const again = descriptor('acme', 'orders', '1', { bytes: Buffer.from('other'), deployedAt: T2 });
        await assert.rejects(
          Promise.resolve().then(() => s.descriptors.insert(again)),
          (err: Error & { code?: string }) =>
            err.code === 'SVC_ERR_CONFLICT' &&
            /descriptor acme\/orders version 1 is already published/.test(err.message),
        );
        const kept = await s.descriptors.get('acme', 'orders', '1');
        assert.deepEqual([kept?.hash, kept?.bytes, kept?.deployedAt], [v1.hash, v1.bytes, T0]);
        assert.equal(await s.descriptors.latestVersion('acme', 'orders'), '2');
      }));

    test('an unknown version, name or tenant finds nothing', async () =>
      withStore(kind, async (s) => {
        await s.descriptors.insert(descriptor('acme', 'orders', '1'));
        assert.equal(await s.descriptors.get('acme', 'orders', '9'), undefined);
        assert.equal(await s.descriptors.get('acme', 'other'), undefined);
        assert.equal(await s.descriptors.latestVersion('other', 'orders'), undefined);
        assert.deepEqual(await s.descriptors.list('other'), []);
        assert.deepEqual(await s.descriptors.latestOfTenant('other'), []);
      }));

    test('list: every version of the tenant, by name in byte order, then deployment time, without bytes', async () =>
      withStore(kind, async (s) => {
        await s.descriptors.insert(descriptor('acme', 'orders', 'b', { deployedAt: T1 }));
        await s.descriptors.insert(descriptor('acme', 'orders', 'a', { deployedAt: T1, makeLatest: false }));
        await s.descriptors.insert(descriptor('acme', 'orders', 'z', { deployedAt: T0, makeLatest: false }));
        await s.descriptors.insert(descriptor('acme', 'Billing', '1'));
        await s.descriptors.insert(descriptor('other', 'orders', '1'));
        const listed = await s.descriptors.list('acme');
        assert.deepEqual(
          listed.map((d) => `${d.name}@${d.version}:${d.latest}`),
          ['Billing@1:true', 'orders@z:false', 'orders@a:false', 'orders@b:true'],
        );
        assert.ok(listed.every((d) => !('bytes' in d)));
        const one = descriptor('acme', 'Billing', '1');
        assert.deepEqual(listed[0], {
          tenant: 'acme',
          name: 'Billing',
          version: '1',
          hash: one.hash,
          sizeBytes: one.bytes.length,
          deployedAt: T0,
          latest: true,
        });
      }));

    test('latestOfTenant: the latest of every name with its bytes, newest deployment first', async () =>
      withStore(kind, async (s) => {
        await s.descriptors.insert(descriptor('acme', 'orders', '1', { deployedAt: T0 }));
        await s.descriptors.insert(descriptor('acme', 'orders', '2', { deployedAt: T2 }));
        await s.descriptors.insert(descriptor('acme', 'b', '1', { deployedAt: T1 }));
        await s.descriptors.insert(descriptor('acme', 'B', '1', { deployedAt: T1 }));
        await s.descriptors.insert(descriptor('acme', 'draft', '1', { deployedAt: T2, makeLatest: false }));
        await s.descriptors.insert(descriptor('other', 'x', '1'));
        const latest = await s.descriptors.latestOfTenant('acme');
        assert.deepEqual(
          latest.map((d) => `${d.name}@${d.version}`),
          ['orders@2', 'B@1', 'b@1'],
        );
        assert.ok(latest.every((d) => d.latest && d.bytes.equals(descriptor('acme', d.name, d.version).bytes)));
      }));

    test('inserts of one version racing from two connections: exactly one succeeds, the other is a conflict', async () =>
      withShared(kind, 2, async (handles) => {
        const tries = handles.flatMap((h, i) =>
          [0, 1]
            .map((j) => descriptor('acme', 'orders', '1', { bytes: Buffer.from(`try ${i}${j}`) }))
            .map((d) => ({ h, d })),
        );
        const outcomes = await Promise.allSettled(
          tries.map(({ h, d }) => Promise.resolve().then(() => h.descriptors.insert(d))),
        );
        assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
        assert.deepEqual(
          outcomes.filter((o) => o.status === 'rejected').map(codeOf),
          Array(tries.length - 1).fill('SVC_ERR_CONFLICT'),
        );
        const winner = tries[outcomes.findIndex((o) => o.status === 'fulfilled')]!.d;
        const stored = await handles[1]!.descriptors.get('acme', 'orders');
        assert.deepEqual([stored?.hash, stored?.bytes], [winner.hash, winner.bytes]);
      }));
  });
}
