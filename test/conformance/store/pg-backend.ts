/** The PostgreSQL backend of the conformance suite: a schema of its own per store, opened by openStore, dropped on close. */
import { freshPgSchema } from '../../helpers/pg.js';
import { EventLog } from '../../../src/store/event-log/event-log.js';
import { openStore, type PgStores } from '../../../src/storage/index.js';
import { PgDb } from '../../../src/store/pg/pg-db.js';
import { bundledMigrations, migratePg } from '../../../src/store/pg/migrate.js';
import { parseStoreUrl } from '../../../src/store/pg/store-url.js';
import { contractsOf, type BackendKind, type StoreBackend } from './backend.js';

function backendOf(s: PgStores, closed: () => Promise<void>): StoreBackend {
  return {
    ...contractsOf(s),
    auditSql: async (sql: string) => {
      await s.db.query(sql);
    },
    openEventWriter: (opts = {}) => new EventLog({ ...opts, pg: s.db }),
    eventSql: async (sql: string) => (await s.db.query(sql)).rows,
    close: async () => {
      await s.close();
      await closed();
    },
  };
}

export const pgBackend: BackendKind = {
  name: 'postgres',
  open: async () => (await pgBackend.openShared(1))[0]!,
  openShared: async (n) => {
    const schema = await freshPgSchema('svcconf');
    let open = n;
    const stores: PgStores[] = [];
    for (let i = 0; i < n; i += 1)
      stores.push((await openStore(schema.url, { pg: { maxConnections: 4 } })) as PgStores);
    return stores.map((s) =>
      backendOf(s, async () => {
        if (--open === 0) await schema.drop();
      }),
    );
  },
  openUpgradedFromBeforeBlocks: async (seedSql) => {
    const schema = await freshPgSchema('svcconf');
    const before = new PgDb(parseStoreUrl(schema.url), { maxConnections: 1 });
    try {
      await migratePg(
        before,
        bundledMigrations().filter((m) => m.version < 10),
      );
      for (const sql of seedSql) await before.query(sql);
    } finally {
      await before.close();
    }
    const s = (await openStore(schema.url, { pg: { maxConnections: 4 } })) as PgStores;
    return backendOf(s, () => schema.drop());
  },
};
