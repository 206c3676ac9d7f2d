/**
 * svc dev's guard, the same cases on both kinds of store: a state directory (the `dev-state` file)
 * and a PostgreSQL store (the `dev_state` row; SVC_TEST_PG_URL, test/helpers/pg.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freshPgSchema } from '../../../helpers/pg.js';
import { statePaths } from '../../../../src/common/paths.js';
import { PgDevState } from '../../../../src/store/pg/pg-dev-state.js';
import { openPgStore } from '../../../../src/store/pg/pg-store.js';
import {
  claimDevState,
  DEV_STATE_MARKER,
  NotDevStateError,
  pgStoreMarker,
  stateDirMarker,
  type DevStateMarker,
} from '../../../../src/app/maintenance/dev-state.js';

/** A fresh, empty store of one kind with its marker, a way to put a registry in it, and a look at the marker behind the guard's back. */
interface GuardedStore {
  readonly marker: DevStateMarker;
  holdRegistry(): Promise<void>;
  /** What the marker says, read directly (undefined when there is none). */
  markerText(): Promise<string | undefined>;
  close(): Promise<void>;
}

const root = mkdtempSync(join(tmpdir(), 'svc-dev-state-'));
after(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

const KINDS: { name: string; open(): Promise<GuardedStore> }[] = [
  {
    name: 'a state directory',
    open: async () => {
      const paths = statePaths(join(root, `dir-${++dirs}`, 'registry.db'));
      const file = join(paths.stateDir, DEV_STATE_MARKER);
      return {
        marker: stateDirMarker(paths),
        holdRegistry: async () => {
          mkdirSync(paths.stateDir, { recursive: true });
          writeFileSync(paths.registryDb, '');
        },
        markerText: async () => (existsSync(file) ? readFileSync(file, 'utf8') : undefined),
        close: async () => undefined,
      };
    },
  },
  {
    name: 'a PostgreSQL store',
    open: async () => {
      const schema = await freshPgSchema('svcdev');
      const pg = await openPgStore(schema.url, { maxConnections: 2 });
      return {
        marker: pgStoreMarker(new PgDevState(pg.db), pg.db.url.redacted),
        holdRegistry: async () =>
          void (await pg.tenants.create({
            id: 'acme',
            displayName: 'Acme',
            authMethods: ['api_key'],
            createdAt: new Date().toISOString(),
          })),
        markerText: async () =>
          (await pg.db.query<{ note: string; marked_at: string }>('SELECT note, marked_at FROM dev_state')).rows.map(
            (r) => `${r.marked_at} ${r.note}`,
          )[0],
        close: async () => {
          await pg.close();
          await schema.drop();
        },
      };
    },
  },
];

for (const kind of KINDS) {
  describe(`svc dev's guard on ${kind.name}`, () => {
    it('marks an empty one on the first run, then finds the mark', async () => {
      const s = await kind.open();
      try {
        assert.equal(await claimDevState(s.marker, {}), 'marked-empty');
        assert.match((await s.markerText()) ?? '', /development .*svc dev deploys every saved flow into it/);
        assert.equal(await claimDevState(s.marker, {}), 'marked');
      } finally {
        await s.close();
      }
    });

    it('refuses one holding a registry without the mark, naming where the mark would be; --force runs unmarked; --init marks it', async () => {
      const s = await kind.open();
      try {
        await s.holdRegistry();
        await assert.rejects(
          claimDevState(s.marker, {}),
          (err: unknown) =>
            err instanceof NotDevStateError &&
            err.message.includes(`${s.marker.where} is not marked as a development one (no ${s.marker.markerPlace})`),
        );
        assert.equal(await s.markerText(), undefined, 'a refusal writes nothing');
        assert.equal(await claimDevState(s.marker, { force: true }), 'forced');
        assert.equal(await s.markerText(), undefined, '--force leaves no mark');
        assert.equal(await claimDevState(s.marker, { init: true }), 'marked-init');
        assert.equal(await claimDevState(s.marker, {}), 'marked');
      } finally {
        await s.close();
      }
    });
  });
}

it('a PostgreSQL store holding only UI accounts already counts as an installation', async () => {
  const schema = await freshPgSchema('svcdev');
  const pg = await openPgStore(schema.url, { maxConnections: 2 });
  try {
    const state = new PgDevState(pg.db);
    assert.equal(await state.isEmpty(), true);
    await pg.db.query(
      `INSERT INTO ui_users (username, role, password_hash, created_at, updated_at) VALUES ('ada', 'sysadmin', 'x', 'now', 'now')`,
    );
    assert.equal(await state.isEmpty(), false);
  } finally {
    await pg.close();
    await schema.drop();
  }
});
