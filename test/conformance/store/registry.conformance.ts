/**
 * The registry's contracts, one behaviour per test, run against every backend: tenants, API keys,
 * artifacts and `latest`, settings, trace flags.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Hex } from '../../../src/common/digest.js';
import type { BackendKind, StoreBackend } from './backend.js';

/** Opens a fresh store for `fn` and closes it whatever happens. */
export async function withStore(kind: BackendKind, fn: (s: StoreBackend) => Promise<void>): Promise<void> {
  const s = await kind.open();
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

/** Opens `n` handles on one fresh store for `fn` (several nodes sharing it) and closes them all after. */
export async function withShared(
  kind: BackendKind,
  n: number,
  fn: (handles: StoreBackend[]) => Promise<void>,
): Promise<void> {
  const handles = await kind.openShared(n);
  try {
    await fn(handles);
  } finally {
    for (const h of handles) await h.close();
  }
}

const T0 = '2026-01-02T03:04:05.000Z';

export function registryConformance(kind: BackendKind): void {
  describe(`tenants (${kind.name})`, () => {
    test('create, get and list by id; the auth methods keep their order', async () =>
      withStore(kind, async (s) => {
        const made = await s.tenants.create({
          id: 'zeta',
          displayName: 'Zeta',
          authMethods: ['api_key', 'hmac'],
          createdAt: T0,
        });
        await s.tenants.create({ id: 'Alpha', displayName: 'A', authMethods: ['api_key'], createdAt: T0 });
        await s.tenants.create({ id: 'alpha', displayName: 'a', authMethods: ['api_key'], createdAt: T0 });
        assert.deepEqual(made, {
          id: 'zeta',
          displayName: 'Zeta',
          status: 'active',
          authMethods: ['api_key', 'hmac'],
          createdAt: T0,
        });
        assert.deepEqual(await s.tenants.get('zeta'), made);
        assert.equal(await s.tenants.get('nobody'), undefined);
        // Byte order, as SQLite compares: upper case before lower case.
        assert.deepEqual(
          (await s.tenants.list()).map((t) => t.id),
          ['Alpha', 'alpha', 'zeta'],
        );
      }));

    test('a taken id is a conflict and changes nothing', async () =>
      withStore(kind, async (s) => {
        await s.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: T0 });
        await assert.rejects(
          Promise.resolve().then(() =>
            s.tenants.create({ id: 'acme', displayName: 'Other', authMethods: ['api_key'], createdAt: T0 }),
          ),
          (err: Error & { code?: string }) =>
            err.code === 'SVC_ERR_CONFLICT' && /tenant "acme" already exists/.test(err.message),
        );
        assert.equal((await s.tenants.get('acme'))?.displayName, 'Acme');
      }));

    test('setStatus reports whether the row changed', async () =>
      withStore(kind, async (s) => {
        await s.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: T0 });
        assert.equal(await s.tenants.setStatus('acme', 'disabled'), true);
        assert.equal(await s.tenants.setStatus('acme', 'disabled'), false);
        assert.equal((await s.tenants.get('acme'))?.status, 'disabled');
        assert.equal(await s.tenants.setStatus('nobody', 'disabled'), false);
      }));
  });

  describe(`API keys (${kind.name})`, () => {
    const key = (
      tenant: string,
      hash: string,
      extra: Partial<{ expiresAt: string | null; rateLimit: number | null }> = {},
    ) => ({
      tenant,
      label: `key ${hash}`,
      keyHash: hash.padEnd(64, '0'),
      scopes: ['run', 'enqueue'],
      flows: ['orders'],
      expiresAt: extra.expiresAt ?? null,
      rateLimit: extra.rateLimit ?? null,
      createdAt: T0,
    });

    test('create returns the stored row; found by hash and by id; listed oldest first', async () =>
      withStore(kind, async (s) => {
        await s.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: T0 });
        assert.equal(await s.keys.hasAnyKey(), false);
        const a = await s.keys.create(key('acme', 'a', { expiresAt: '2030-01-31T23:59:59Z', rateLimit: 2.5 }));
        const b = await s.keys.create(key('acme', 'b'));
        assert.equal(typeof a.id, 'number');
        assert.ok(b.id > a.id);
        assert.deepEqual(a, {
          id: a.id,
          tenant: 'acme',
          label: 'key a',
          keyHash: 'a'.padEnd(64, '0'),
          scopes: ['run', 'enqueue'],
          flows: ['orders'],
          expiresAt: '2030-01-31T23:59:59Z',
          rateLimit: 2.5,
          revokedAt: null,
          createdAt: T0,
        });
        assert.deepEqual(await s.keys.findByHash('a'.padEnd(64, '0')), a);
        assert.deepEqual(await s.keys.get(b.id), b);
        assert.equal(await s.keys.findByHash('f'.repeat(64)), undefined);
        assert.deepEqual(
          (await s.keys.list('acme')).map((k) => k.id),
          [a.id, b.id],
        );
        assert.deepEqual(await s.keys.list('other'), []);
        assert.equal(await s.keys.hasAnyKey(), true);
      }));

    test("listAll: every tenant's keys in one read, by tenant id in byte order, then oldest first", async () =>
      withStore(kind, async (s) => {
        for (const id of ['beta', 'Zeta', 'acme'])
          await s.tenants.create({ id, displayName: id, authMethods: ['api_key'], createdAt: T0 });
        assert.deepEqual(await s.keys.listAll(), []);
        const b1 = await s.keys.create(key('beta', '1'));
        const a1 = await s.keys.create(key('acme', '2'));
        const z1 = await s.keys.create(key('Zeta', '3'));
        const a2 = await s.keys.create(key('acme', '4'));
        await s.keys.revoke(a2.id, T0);
        const all = await s.keys.listAll();
        assert.deepEqual(
          all.map((k) => k.id),
          [z1.id, a1.id, a2.id, b1.id],
        );
        assert.deepEqual(all[2], await s.keys.get(a2.id));
      }));

    test('a key of an unregistered tenant is refused', async () =>
      withStore(kind, async (s) => {
        await assert.rejects(Promise.resolve().then(() => s.keys.create(key('ghost', 'a'))));
        assert.equal(await s.keys.hasAnyKey(), false);
      }));

    test('revoke: once revoked, then already revoked; an unknown id is not found', async () =>
      withStore(kind, async (s) => {
        await s.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: T0 });
        const a = await s.keys.create(key('acme', 'a'));
        assert.equal(await s.keys.revoke(a.id, T0), 'revoked');
        assert.equal(await s.keys.revoke(a.id, '2027-01-01T00:00:00.000Z'), 'already_revoked');
        assert.equal((await s.keys.get(a.id))?.revokedAt, T0);
        assert.equal(await s.keys.revoke(a.id + 1000, T0), 'not_found');
      }));

    test('revokes racing from several connections: exactly one wins', async () => {
      const handles = await kind.openShared(3);
      try {
        await handles[0]!.tenants.create({ id: 'acme', displayName: 'Acme', authMethods: ['api_key'], createdAt: T0 });
        const a = await handles[0]!.keys.create(key('acme', 'a'));
        const outcomes = await Promise.all(handles.flatMap((h) => [h.keys.revoke(a.id, T0), h.keys.revoke(a.id, T0)]));
        assert.deepEqual(outcomes.filter((o) => o === 'revoked').length, 1);
        assert.equal(outcomes.filter((o) => o === 'already_revoked').length, outcomes.length - 1);
      } finally {
        for (const h of handles) await h.close();
      }
    });
  });

  describe(`artifacts and latest (${kind.name})`, () => {
    const artifact = (text: string) => ({ bytes: text, hash: sha256Hex(Buffer.from(text, 'utf8')) });

    test('publish stores the bytes, the version and moves latest; versions listed oldest first', async () =>
      withStore(kind, async (s) => {
        const v1 = artifact('{"flow":"orders","v":1}');
        const v2 = artifact('{"flow":"orders","v":2}');
        await s.artifacts.publish({
          tenant: 'acme',
          name: 'orders',
          version: '1.0.0',
          ...v1,
          createdAt: T0,
          source: '# orders v1',
        });
        await s.artifacts.publish({ tenant: 'acme', name: 'orders', version: '2.0.0', ...v2, createdAt: T0 });
        assert.deepEqual(await s.artifacts.resolveLatest('acme', 'orders'), {
          version: '2.0.0',
          hash: v2.hash,
          created_at: T0,
        });
        assert.deepEqual(await s.artifacts.getByVersion('acme', 'orders', '1.0.0'), {
          version: '1.0.0',
          hash: v1.hash,
          created_at: T0,
        });
        // Same instant: deploy order decides.
        assert.deepEqual(await s.artifacts.listVersions('acme', 'orders'), [
          { version: '1.0.0', hash: v1.hash, created_at: T0, latest: false },
          { version: '2.0.0', hash: v2.hash, created_at: T0, latest: true },
        ]);
        assert.equal((await s.artifacts.getArtifact(v1.hash))?.toString('utf8'), '{"flow":"orders","v":1}');
        assert.equal(await s.artifacts.getSource('acme', 'orders', '1.0.0'), '# orders v1');
        assert.equal(await s.artifacts.getSource('acme', 'orders', '2.0.0'), undefined);
        assert.equal(await s.artifacts.resolveLatest('acme', 'nothing'), undefined);
        assert.equal(await s.artifacts.getArtifact('0'.repeat(64)), undefined);
      }));

    test('a version is never replaced: publishing it again is refused and changes nothing', async () =>
      withStore(kind, async (s) => {
        const v1 = artifact('one');
        await s.artifacts.publish({ tenant: 'acme', name: 'orders', version: '1', ...v1, createdAt: T0 });
        await s.artifacts.publish({ tenant: 'acme', name: 'orders', version: '2', ...artifact('two'), createdAt: T0 });
        await assert.rejects(
          Promise.resolve().then(() =>
            s.artifacts.publish({ tenant: 'acme', name: 'orders', version: '1', ...artifact('other'), createdAt: T0 }),
          ),
          { name: 'DuplicateVersionError' },
        );
        assert.equal((await s.artifacts.getByVersion('acme', 'orders', '1'))?.hash, v1.hash);
        assert.equal((await s.artifacts.resolveLatest('acme', 'orders'))?.version, '2');
      }));

    test('bytes that do not match their hash are refused before anything is written', async () =>
      withStore(kind, async (s) => {
        await assert.rejects(
          Promise.resolve().then(() =>
            s.artifacts.publish({
              tenant: 'acme',
              name: 'orders',
              version: '1',
              bytes: 'abc',
              hash: 'f'.repeat(64),
              createdAt: T0,
            }),
          ),
          { name: 'IntegrityError' },
        );
        assert.deepEqual(await s.artifacts.listLatest(), []);
      }));

    test('identical bytes are stored once, under one address, for two flows', async () =>
      withStore(kind, async (s) => {
        const same = artifact('shared');
        await s.artifacts.publish({ tenant: 'acme', name: 'b', version: '1', ...same, createdAt: T0 });
        await s.artifacts.publish({ tenant: 'acme', name: 'a', version: '1', ...same, createdAt: T0 });
        await s.artifacts.publish({ tenant: 'Beta', name: 'z', version: '1', ...artifact('z'), createdAt: T0 });
        assert.deepEqual(
          (await s.artifacts.listLatest()).map((l) => `${l.tenant}/${l.name}`),
          ['Beta/z', 'acme/a', 'acme/b'],
        );
        assert.equal((await s.artifacts.getArtifact(same.hash))?.toString(), 'shared');
      }));

    const tenant = (s: StoreBackend, id: string) =>
      s.tenants.create({ id, displayName: id, authMethods: ['api_key'], createdAt: T0 });
    const input = (name: string, version: string, text: string, who = 'acme') => ({
      tenant: who,
      name,
      version,
      ...artifact(text),
      createdAt: T0,
    });

    test('publishMany publishes every flow and moves each latest', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        await s.artifacts.publish(input('a', '1', 'a1'));
        assert.deepEqual(
          await s.artifacts.publishMany([{ ...input('a', '2', 'a2'), source: '# a' }, input('b', '2', 'b2')]),
          [],
        );
        assert.equal((await s.artifacts.resolveLatest('acme', 'a'))?.version, '2');
        assert.equal((await s.artifacts.resolveLatest('acme', 'b'))?.hash, artifact('b2').hash);
        assert.equal(await s.artifacts.getSource('acme', 'a', '2'), '# a');
      }));

    test('publishMany refuses every flow it must, in input order, and then publishes none', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        await tenant(s, 'off');
        await s.tenants.setStatus('off', 'disabled');
        await s.artifacts.publish(input('taken', '1', 'old'));
        const inputs = [
          input('fresh', '1', 'fresh'),
          input('x', '1', 'x', 'ghost'),
          input('taken', '1', 'new'),
          input('y', '1', 'y', 'off'),
        ];
        const expected = [
          { index: 1, reason: 'tenant-not-registered' },
          { index: 2, reason: 'version-exists' },
          { index: 3, reason: 'tenant-disabled' },
        ];
        assert.deepEqual(await s.artifacts.publishRefusals(inputs), expected);
        assert.deepEqual(await s.artifacts.publishMany(inputs), expected);
        assert.equal(await s.artifacts.getByVersion('acme', 'fresh', '1'), undefined);
        assert.equal((await s.artifacts.getByVersion('acme', 'taken', '1'))?.hash, artifact('old').hash);
        assert.deepEqual(
          (await s.artifacts.listLatest()).map((l) => `${l.tenant}/${l.name}@${l.version}`),
          ['acme/taken@1'],
        );
      }));

    test('publishRefusals only reads: nothing is published', async () =>
      withStore(kind, async (s) => {
        await tenant(s, 'acme');
        assert.deepEqual(await s.artifacts.publishRefusals([input('a', '1', 'a')]), []);
        assert.deepEqual(await s.artifacts.listLatest(), []);
      }));

    test('two publishMany of one version on two handles: one publishes all, the other is refused for all', async () =>
      withShared(kind, 2, async ([one, two]) => {
        await tenant(one!, 'acme');
        const results = await Promise.all([
          Promise.resolve().then(() =>
            one!.artifacts.publishMany([input('a', '1', 'one-a'), input('b', '1', 'one-b')]),
          ),
          Promise.resolve().then(() =>
            two!.artifacts.publishMany([input('b', '1', 'two-b'), input('a', '1', 'two-a')]),
          ),
        ]);
        const winner = results.findIndex((r) => r.length === 0);
        assert.notEqual(winner, -1);
        assert.deepEqual(results[1 - winner], [
          { index: 0, reason: 'version-exists' },
          { index: 1, reason: 'version-exists' },
        ]);
        const prefix = winner === 0 ? 'one' : 'two';
        assert.equal((await two!.artifacts.getByVersion('acme', 'a', '1'))?.hash, artifact(`${prefix}-a`).hash);
        assert.equal((await one!.artifacts.getByVersion('acme', 'b', '1'))?.hash, artifact(`${prefix}-b`).hash);
      }));
  });

  describe(`settings (${kind.name})`, () => {
    test('an unset setting reads its default; a set one reads back; list shows both', async () =>
      withStore(kind, async (s) => {
        const before = await s.settings.get('log_retention_days');
        assert.equal(await s.settings.raw('log_retention_days'), undefined);
        await s.settings.set('log_retention_days', ' 3 ');
        assert.equal(await s.settings.get('log_retention_days'), 3);
        assert.equal(await s.settings.raw('log_retention_days'), '3');
        const listed = await s.settings.list();
        const row = listed.find((v) => v.name === 'log_retention_days')!;
        assert.deepEqual([row.value, row.raw, row.isDefault], [3, '3', false]);
        assert.ok(listed.some((v) => v.isDefault));
        assert.notEqual(before, 3);
      }));

    test('unset removes the stored row (the default is in force again) and says whether there was one', async () =>
      withStore(kind, async (s) => {
        const fallback = await s.settings.get('log_retention_days');
        await s.settings.set('log_retention_days', '3');
        assert.equal(await s.settings.unset('log_retention_days'), true);
        assert.equal(await s.settings.raw('log_retention_days'), undefined);
        assert.equal(await s.settings.get('log_retention_days'), fallback);
        assert.equal(await s.settings.unset('log_retention_days'), false);
        await assert.rejects(
          Promise.resolve().then(() => s.settings.unset('no_such_setting')),
          /unknown setting "no_such_setting"/,
        );
      }));

    test('an unknown name or a value the reader would not take is refused, and nothing is stored', async () =>
      withStore(kind, async (s) => {
        await assert.rejects(
          Promise.resolve().then(() => s.settings.set('no_such_setting', 1)),
          /unknown setting "no_such_setting"/,
        );
        await assert.rejects(
          Promise.resolve().then(() => s.settings.set('log_retention_days', '-1')),
          /needs a whole number/,
        );
        assert.equal(await s.settings.raw('log_retention_days'), undefined);
      }));
  });

  describe(`trace flags (${kind.name})`, () => {
    test('off until set; set reports a change only when the flag changed; listed by tenant and flow', async () =>
      withStore(kind, async (s) => {
        assert.equal(await s.traces.isEnabled('acme', 'orders'), false);
        assert.equal(await s.traces.set('acme', 'orders', true, T0), true);
        assert.equal(await s.traces.set('acme', 'orders', true, '2027-01-01T00:00:00.000Z'), false);
        assert.equal(await s.traces.isEnabled('acme', 'orders'), true);
        assert.equal(await s.traces.set('acme', 'Billing', false, T0), true);
        assert.equal(await s.traces.set('Zed', 'x', true, T0), true);
        assert.deepEqual(await s.traces.list('acme'), [
          { tenant: 'acme', flow: 'Billing', enabled: false, updated_at: T0 },
          { tenant: 'acme', flow: 'orders', enabled: true, updated_at: T0 },
        ]);
        assert.deepEqual(
          (await s.traces.list()).map((f) => `${f.tenant}/${f.flow}`),
          ['Zed/x', 'acme/Billing', 'acme/orders'],
        );
      }));
  });
}
