/** The PostgreSQL backend of the queue conformance suite: one schema per store, each handle a node of its own (its own pool and lease). */
import { freshPgSchema } from '../../helpers/pg.js';
import { openPgStore } from '../../../src/store/pg/pg-store.js';
import { PgQueueStore } from '../../../src/queue/pg/pg-queue-store.js';
import type { QueueBackendHandle, QueueBackendKind } from './backend-kind.js';

export const pgQueueBackend: QueueBackendKind = {
  name: 'postgres',
  open: async () => (await pgQueueBackend.openShared(1))[0]!,
  openShared: async (n) => {
    const schema = await freshPgSchema('svcqconf');
    let open = n;
    const handles: QueueBackendHandle[] = [];
    for (let i = 0; i < n; i++) {
      const store = await openPgStore(schema.url, { maxConnections: 4 });
      const backend = new PgQueueStore(store.db, { lease: { leaseMs: 4000, heartbeatMs: 500 } });
      let closed = false;
      handles.push({
        backend,
        close: async () => {
          if (closed) return;
          closed = true;
          try {
            await backend.close();
            await store.close();
          } finally {
            if (--open === 0) await schema.drop();
          }
        },
      });
    }
    return handles;
  },
};
