/**
 * The management UI's contracts, one behaviour per test, run against every backend: accounts
 * (store/contracts/ui-users.ts) and sessions with the installation's CSRF key (store/contracts/ui-sessions.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackendKind, StoreBackend } from './backend.js';
import { withStore } from './registry.conformance.js';
import type { NewUiUser, UiRole } from '../../../src/store/contracts/index.js';

const T0 = '2026-01-02T03:04:05.000Z';
const T1 = '2026-02-03T04:05:06.000Z';

const user = (
  username: string,
  role: UiRole = 'developer',
  passwordHash = `scrypt$hash-of-${username}`,
): NewUiUser => ({ username, role, passwordHash, at: T0 });

/** Opens `n` handles on one new store for `fn` and closes them all whatever happens. */
async function withShared(kind: BackendKind, n: number, fn: (handles: StoreBackend[]) => Promise<void>): Promise<void> {
  const handles = await kind.openShared(n);
  try {
    await fn(handles);
  } finally {
    for (const h of handles) await h.close();
  }
}

export function uiConformance(kind: BackendKind): void {
  describe(`UI users (${kind.name})`, () => {
    test('insert returns the stored account, found by id and by username with its hash; count follows', async () =>
      withStore(kind, async (s) => {
        assert.equal(await s.uiUsers.count(), 0);
        const ann = await s.uiUsers.insert(user('ann', 'sysadmin'));
        const bob = await s.uiUsers.insert(user('bob'));
        assert.ok(ann !== undefined && bob !== undefined);
        assert.equal(typeof ann.id, 'number');
        assert.ok(bob.id > ann.id);
        assert.deepEqual(ann, {
          id: ann.id,
          username: 'ann',
          role: 'sysadmin',
          disabled: false,
          createdAt: T0,
          updatedAt: T0,
        });
        assert.deepEqual(await s.uiUsers.byId(ann.id), ann);
        assert.deepEqual(await s.uiUsers.credentials('bob'), { user: bob, passwordHash: 'scrypt$hash-of-bob' });
        assert.equal(await s.uiUsers.byId(bob.id + 1000), undefined);
        assert.equal(await s.uiUsers.credentials('nobody'), undefined);
        assert.equal(await s.uiUsers.count(), 2);
      }));

    test('a taken username: insert returns undefined and the account keeps its role and hash', async () =>
      withStore(kind, async (s) => {
        const first = await s.uiUsers.insert(user('ann', 'support', 'scrypt$first'));
        assert.equal(await s.uiUsers.insert(user('ann', 'sysadmin', 'scrypt$second')), undefined);
        assert.deepEqual(await s.uiUsers.credentials('ann'), { user: first, passwordHash: 'scrypt$first' });
        assert.equal(await s.uiUsers.count(), 1);
      }));

    test('a role outside sysadmin, support and developer is refused', async () =>
      withStore(kind, async (s) => {
        await assert.rejects(Promise.resolve().then(() => s.uiUsers.insert(user('ann', 'root' as UiRole))));
        assert.equal(await s.uiUsers.count(), 0);
      }));

    test('list is by username in byte order', async () =>
      withStore(kind, async (s) => {
        for (const name of ['ab', 'a_b', 'a.d', 'a-c', 'Zed', 'a@e']) await s.uiUsers.insert(user(name));
        // Byte order, as SQLite compares: "-" < "." < "@" < upper case < "_" < lower case.
        assert.deepEqual(
          (await s.uiUsers.list()).map((u) => u.username),
          ['Zed', 'a-c', 'a.d', 'a@e', 'a_b', 'ab'],
        );
      }));

    test('setDisabled reports a change only when the flag changed and stamps updatedAt', async () =>
      withStore(kind, async (s) => {
        await s.uiUsers.insert(user('ann'));
        assert.equal(await s.uiUsers.setDisabled('ann', false, T1), false);
        assert.equal((await s.uiUsers.credentials('ann'))?.user.updatedAt, T0);
        assert.equal(await s.uiUsers.setDisabled('ann', true, T1), true);
        assert.equal(await s.uiUsers.setDisabled('ann', true, '2027-01-01T00:00:00.000Z'), false);
        const disabled = (await s.uiUsers.list())[0]!;
        assert.deepEqual([disabled.disabled, disabled.updatedAt, disabled.createdAt], [true, T1, T0]);
        assert.equal(await s.uiUsers.setDisabled('ann', false, T1), true);
        assert.equal((await s.uiUsers.list())[0]!.disabled, false);
        assert.equal(await s.uiUsers.setDisabled('nobody', true, T1), false);
      }));

    test('credentials of a disabled user still come back, with the flag set and the hash', async () =>
      withStore(kind, async (s) => {
        const ann = await s.uiUsers.insert(user('ann', 'support', 'scrypt$ann'));
        await s.uiUsers.setDisabled('ann', true, T1);
        assert.deepEqual(await s.uiUsers.credentials('ann'), {
          user: { ...ann!, disabled: true, updatedAt: T1 },
          passwordHash: 'scrypt$ann',
        });
        assert.equal((await s.uiUsers.byId(ann!.id))?.disabled, true);
      }));

    test('setPasswordHash replaces the hash of an existing user only', async () =>
      withStore(kind, async (s) => {
        await s.uiUsers.insert(user('ann', 'support', 'scrypt$old'));
        assert.equal(await s.uiUsers.setPasswordHash('ann', 'scrypt$new', T1), true);
        const found = await s.uiUsers.credentials('ann');
        assert.deepEqual([found?.passwordHash, found?.user.updatedAt, found?.user.createdAt], ['scrypt$new', T1, T0]);
        assert.equal(await s.uiUsers.setPasswordHash('nobody', 'scrypt$x', T1), false);
        assert.equal(await s.uiUsers.count(), 1);
      }));

    test('insertIfNone creates the first account only', async () =>
      withStore(kind, async (s) => {
        const admin = await s.uiUsers.insertIfNone(user('admin', 'sysadmin'));
        assert.deepEqual(admin, {
          id: admin?.id,
          username: 'admin',
          role: 'sysadmin',
          disabled: false,
          createdAt: T0,
          updatedAt: T0,
        });
        assert.equal(await s.uiUsers.insertIfNone(user('other', 'sysadmin')), undefined);
        assert.deepEqual(
          (await s.uiUsers.list()).map((u) => u.username),
          ['admin'],
        );
      }));

    test('insertIfNone on a store that has a user creates nothing', async () =>
      withStore(kind, async (s) => {
        await s.uiUsers.insert(user('ann'));
        assert.equal(await s.uiUsers.insertIfNone(user('admin', 'sysadmin')), undefined);
        assert.deepEqual(
          (await s.uiUsers.list()).map((u) => u.username),
          ['ann'],
        );
      }));

    test('insertIfNone racing from three connections: exactly one account is created', async () =>
      withShared(kind, 3, async (handles) => {
        const names = handles.flatMap((_, i) => [`admin${i}a`, `admin${i}b`]);
        const made = await Promise.all(
          names.map((name, j) => handles[Math.floor(j / 2)]!.uiUsers.insertIfNone(user(name, 'sysadmin'))),
        );
        const winners = made.filter((u) => u !== undefined);
        assert.equal(winners.length, 1);
        assert.deepEqual(
          (await handles[0]!.uiUsers.list()).map((u) => u.username),
          [winners[0]!.username],
        );
        assert.equal(await handles[2]!.uiUsers.count(), 1);
      }));
  });

  describe(`UI sessions (${kind.name})`, () => {
    const session = (idHash: string, userId: number, createdAtMs: number, lastSeenMs = createdAtMs) => ({
      idHash: idHash.padEnd(64, '0'),
      userId,
      createdAtMs,
      lastSeenMs,
    });

    /** A store with two accounts, for sessions to belong to. */
    const withUsers = (fn: (s: StoreBackend, ann: number, bob: number) => Promise<void>) =>
      withStore(kind, async (s) => {
        const ann = await s.uiUsers.insert(user('ann'));
        const bob = await s.uiUsers.insert(user('bob'));
        await fn(s, ann!.id, bob!.id);
      });

    test('insert then get returns the row; an unknown id hash is undefined', async () =>
      withUsers(async (s, ann) => {
        const a = session('a', ann, 1_700_000_000_000, 1_700_000_000_500);
        await s.uiSessions.insert(a);
        assert.deepEqual(await s.uiSessions.get(a.idHash), a);
        assert.equal(await s.uiSessions.get('f'.repeat(64)), undefined);
      }));

    test('a session of an unknown user, or a taken id hash, is refused', async () =>
      withUsers(async (s, ann, bob) => {
        await assert.rejects(Promise.resolve().then(() => s.uiSessions.insert(session('a', bob + 1000, 1000))));
        await s.uiSessions.insert(session('b', ann, 1000));
        await assert.rejects(Promise.resolve().then(() => s.uiSessions.insert(session('b', bob, 2000))));
        assert.deepEqual(await s.uiSessions.get(session('b', 0, 0).idHash), session('b', ann, 1000));
        assert.equal(await s.uiSessions.get(session('a', 0, 0).idHash), undefined);
      }));

    test('touch moves last seen only, of that session only; an unknown one is ignored', async () =>
      withUsers(async (s, ann) => {
        await s.uiSessions.insert(session('a', ann, 1000));
        await s.uiSessions.insert(session('b', ann, 1000));
        await s.uiSessions.touch(session('a', 0, 0).idHash, 5000);
        await s.uiSessions.touch('f'.repeat(64), 5000);
        assert.deepEqual(await s.uiSessions.get(session('a', 0, 0).idHash), session('a', ann, 1000, 5000));
        assert.deepEqual(await s.uiSessions.get(session('b', 0, 0).idHash), session('b', ann, 1000));
      }));

    test('delete ends one session and leaves the others', async () =>
      withUsers(async (s, ann) => {
        await s.uiSessions.insert(session('a', ann, 1000));
        await s.uiSessions.insert(session('b', ann, 1000));
        await s.uiSessions.delete(session('a', 0, 0).idHash);
        await s.uiSessions.delete('f'.repeat(64));
        assert.equal(await s.uiSessions.get(session('a', 0, 0).idHash), undefined);
        assert.deepEqual(await s.uiSessions.get(session('b', 0, 0).idHash), session('b', ann, 1000));
      }));

    test("deleteForUser ends every session of that user and counts them; another user's stay", async () =>
      withUsers(async (s, ann, bob) => {
        for (const id of ['a', 'b', 'c']) await s.uiSessions.insert(session(id, ann, 1000));
        await s.uiSessions.insert(session('d', bob, 1000));
        assert.equal(await s.uiSessions.deleteForUser(ann), 3);
        assert.equal(await s.uiSessions.deleteForUser(ann), 0);
        assert.equal(await s.uiSessions.get(session('a', 0, 0).idHash), undefined);
        assert.deepEqual(await s.uiSessions.get(session('d', 0, 0).idHash), session('d', bob, 1000));
      }));

    test('deleteExpired drops sessions idle since before, or created before, the limits, and counts them', async () =>
      withUsers(async (s, ann) => {
        await s.uiSessions.insert(session('a', ann, 1000, 9000)); // created too long ago
        await s.uiSessions.insert(session('b', ann, 5000, 5000)); // idle too long
        await s.uiSessions.insert(session('c', ann, 2000, 8000)); // on both limits exactly: kept
        await s.uiSessions.insert(session('d', ann, 9000, 9000)); // fresh
        assert.equal(await s.uiSessions.deleteExpired(8000, 2000), 2);
        assert.equal(await s.uiSessions.deleteExpired(8000, 2000), 0);
        const left = await Promise.all(
          ['a', 'b', 'c', 'd'].map(async (id) => (await s.uiSessions.get(session(id, 0, 0).idHash)) !== undefined),
        );
        assert.deepEqual(left, [false, false, true, true]);
      }));

    test('csrfKey stores the first key made and gives it to every later caller', async () =>
      withStore(kind, async (s) => {
        assert.equal(await s.uiSessions.csrfKey(() => 'key-one'), 'key-one');
        assert.equal(await s.uiSessions.csrfKey(() => 'key-two'), 'key-one');
      }));

    test('csrfKey racing from three connections: every caller gets the same key, one of those made', async () =>
      withShared(kind, 3, async (handles) => {
        const made: string[] = [];
        const make = (key: string) => () => (made.push(key), key);
        const keys = await Promise.all(
          handles.flatMap((h, i) => [h.uiSessions.csrfKey(make(`key-${i}a`)), h.uiSessions.csrfKey(make(`key-${i}b`))]),
        );
        assert.equal(new Set(keys).size, 1);
        assert.ok(made.includes(keys[0]!));
        assert.equal(await handles[1]!.uiSessions.csrfKey(make('late')), keys[0]);
      }));
  });
}
