/** The file backend of the queue conformance suite: FileQueueStore instances (each of a state directory opened by openStore) on one `queues/` directory in a temporary directory. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../../src/storage/index.js';
import type { QueueBackendHandle, QueueBackendKind } from './backend-kind.js';

export const fileBackend: QueueBackendKind = {
  name: 'files',
  open: async () => (await fileBackend.openShared(1))[0]!,
  openShared: async (n) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-queue-conf-'));
    let open = n;
    const handles: QueueBackendHandle[] = [];
    for (let i = 0; i < n; i++) {
      const store = await openStore(join(dir, 'registry.db'));
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
            if (--open === 0) rmSync(dir, { recursive: true, force: true });
          }
        },
      });
    }
    return handles;
  },
  // Two QueueStores in one process do exclude each other's workers (the consumer lock is a file
  // created with O_EXCL, and its holder's PID is alive), but consumedElsewhere tells another
  // process from this one by PID, so a shared handle here counts the other's worker as its own
  // process's. test/queue-multiprocess.test.ts and test/queue-shared-state.test.ts cover it with
  // real processes.
  consumedElsewhereUntestable:
    'FileQueueStore handles in one process share a PID; the multi-process tests (test/queue-multiprocess.test.ts, test/queue-shared-state.test.ts) cover consumedElsewhere',
};
