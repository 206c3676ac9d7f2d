/** The PostgreSQL backend of the conformance suite: a schema of its own per store, dropped on close. */
import { freshPgSchema } from '../../helpers/pg.js';
import { EventLog } from '../../../src/store/event-log/event-log.js';
import { openPgStore } from '../../../src/store/pg/pg-store.js';
import type { BackendKind } from './backend.js';

export const pgBackend: BackendKind = {
  name: 'postgres',
  open: async () => (await pgBackend.openShared(1))[0]!,
  openShared: async (n) => {
    const schema = await freshPgSchema('svcconf');
    let open = n;
    const stores = [];
    for (let i = 0; i < n; i += 1) stores.push(await openPgStore(schema.url, { maxConnections: 4 }));
    return stores.map((s) => ({
      ...s,
      auditSql: async (sql: string) => {
        await s.db.query(sql);
      },
      eventLog: s.events,
      openEventWriter: (opts = {}) => new EventLog({ ...opts, pg: s.db }),
      eventSql: async (sql: string) => (await s.db.query(sql)).rows,
      close: async () => {
        await s.close();
        if (--open === 0) await schema.drop();
      },
    }));
  },
};
