/** The PostgreSQL backend of the queue conformance suite: one schema per store opened by openStore, each handle a node of its own (its own pool and lease). */
import { freshPgSchema } from '../../helpers/pg.js';
import { openStore } from '../../../src/storage/index.js';
import type { QueueBackendHandle, QueueBackendKind } from './backend-kind.js';

export const pgQueueBackend: QueueBackendKind = {
  name: 'postgres',
  open: async () => (await pgQueueBackend.openShared(1))[0]!,
  openShared: async (n) => {
    const schema = await freshPgSchema('svcqconf');
    let open = n;
    const handles: QueueBackendHandle[] = [];
    for (let i = 0; i < n; i++) {
      const store = await openStore(schema.url, {
        pg: { maxConnections: 4 },
        queues: { lease: { leaseMs: 4000, heartbeatMs: 500 } },
      });
      const backend = store.queues;
      let closed = false;
      handles.push({
        backend,
        close: async () => {
          if (closed) return;
          closed = true;
          try {
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
