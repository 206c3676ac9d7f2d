/** The embedded backend of the conformance suite: a state directory in a temporary directory, opened by openStore. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLog } from '../../../src/store/event-log/event-log.js';
import { openStore, type SqliteStores } from '../../../src/storage/index.js';
import { openDb } from '../../../src/store/sqlite/db.js';
import { logMigrations } from '../../../src/store/sqlite/migrations/log.js';
import { contractsOf, type BackendKind, type StoreBackend } from './backend.js';

/** The registry, the audit trail, the UI's accounts and the event log, each in its file of `dir`, as in a state directory. */
async function openFiles(dir: string, cleanup: () => void): Promise<StoreBackend> {
  const s = (await openStore(join(dir, 'registry.db'))) as SqliteStores;
  return {
    ...contractsOf(s),
    auditSql: async (sql) => {
      s.database('audit').exec(sql);
    },
    openEventWriter: (opts = {}) =>
      new EventLog({ ...opts, logDb: join(dir, 'log.db'), logsDir: join(dir, 'logs'), inline: true }),
    eventSql: async (sql) => s.database('log').prepare(sql).all() as Record<string, unknown>[],
    close: async () => {
      await s.close();
      cleanup();
    },
  };
}

export const sqliteBackend: BackendKind = {
  name: 'sqlite',
  open: async () => (await sqliteBackend.openShared(1))[0]!,
  openShared: async (n) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-conf-'));
    let open = n;
    const cleanup = () => {
      if (--open === 0) rmSync(dir, { recursive: true, force: true });
    };
    const backends: StoreBackend[] = [];
    for (let i = 0; i < n; i += 1) backends.push(await openFiles(dir, cleanup));
    return backends;
  },
  openUpgradedFromBeforeBlocks: async (seedSql) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-conf-'));
    const before = openDb(
      join(dir, 'log.db'),
      logMigrations.filter((m) => m.version < 10),
    );
    for (const sql of seedSql) before.exec(sql);
    before.close();
    return openFiles(dir, () => rmSync(dir, { recursive: true, force: true }));
  },
};
