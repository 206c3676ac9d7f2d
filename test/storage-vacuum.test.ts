/**
 * Black-box: a log.db made before incremental auto-vacuum and too large to convert at open is named
 * by a start-up WARNING of svc serve; `svc storage vacuum` converts it offline, keeping its rows,
 * and the warning is gone at the next start.
 */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import { fileBytes, inspectDatabaseFile } from '../src/store/sqlite/auto-vacuum.js';
import { CONVERT_AT_OPEN_MAX_BYTES, migrate } from '../src/store/sqlite/db.js';
import { SqliteEventLogStore } from '../src/store/sqlite/sqlite-event-log-store.js';
import { packRow } from '../src/store/event-log/event-log-row.js';
import { logMigrations } from '../src/store/sqlite/migrations/log.js';
import { makeSandbox, onlyOn, startServer, svc, type Sandbox } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

/** An old-style log.db (auto_vacuum 0) just over the convert-at-open limit; returns its row count. */
function oldStyleLogDb(path: string): number {
  const db = new Database(path);
  db.pragma('journal_mode = DELETE');
  migrate(db, logMigrations);
  const repo = new SqliteEventLogStore(db);
  let rows = 0;
  while (fileBytes(path) < CONVERT_AT_OPEN_MAX_BYTES + 1024 * 1024) {
    const flat = [];
    for (let i = 0; i < 2000; i++, rows++) {
      flat.push(
        ...packRow({
          ts: new Date().toISOString(),
          correlation_id: `old-${rows}`,
          tenant: 'acme',
          flow: 'orders',
          step: null,
          event: 'received',
          payload: JSON.stringify({ pad: 'p'.repeat(400) }),
          payload_truncated: 0,
          http_status: null,
          outcome: null,
          reason: null,
        }),
      );
    }
    repo.insertColumns(flat);
  }
  repo.close();
  return rows;
}

function countRows(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

// On --store the command is refused (test/cli-store-pg.test.ts): PostgreSQL reclaims space with its own VACUUM.
describe(
  'svc storage vacuum',
  { skip: onlyOn('sqlite', 'the auto-vacuum mode of the SQLite files of the state directory') },
  () => {
    let sb: Sandbox;
    let logDb = '';
    let rows = 0;
    before(() => {
      sb = makeSandbox();
      const paths = statePaths(sb.db);
      mkdirSync(paths.stateDir, { recursive: true });
      logDb = paths.logDb;
      rows = oldStyleLogDb(logDb);
      assert.equal(inspectDatabaseFile(logDb).autoVacuum, 0);
    });
    after(() => sb?.cleanup());

    it('svc serve warns once at start about the large old-style log.db, naming the command, and leaves the file as it is', async () => {
      const server = await startServer(sb, ['--no-auth']);
      try {
        await waitFor('the warning', () => server.output().includes('svc storage vacuum'), 5000);
        const lines = server
          .output()
          .split('\n')
          .filter((l) => l.includes('WARNING') && l.includes('auto-vacuum'));
        assert.equal(lines.length, 1, server.output());
        assert.ok(lines[0]!.includes(logDb) && lines[0]!.includes(`svc storage vacuum --db ${sb.db}`), lines[0]);
        assert.ok(
          !lines[0]!.split(': created')[0]!.includes('registry.db'),
          'the registry was created by this version: not named',
        );
      } finally {
        assert.equal(await server.stop(), 0);
      }
      assert.equal(inspectDatabaseFile(logDb).autoVacuum, 0, 'not converted at start');
    });

    it('converts it offline and keeps its rows; the next start has no warning', async () => {
      const r = svc(sb, ['storage', 'vacuum', '--db', sb.db, '--json']);
      assert.equal(r.code, 0, r.stderr);
      const results = JSON.parse(r.stdout) as { name: string; result: string; action?: string }[];
      assert.deepEqual(
        results.find((x) => x.name === 'log'),
        { ...results.find((x) => x.name === 'log'), result: 'done', action: 'converted' },
      );
      assert.equal(
        results.find((x) => x.name === 'registry')?.action,
        'reclaimed',
        'already incremental: only its free pages given back',
      );
      assert.equal(inspectDatabaseFile(logDb).autoVacuum, 2);
      assert.ok(countRows(logDb) >= rows, 'every row kept (the server may have added its own)');
      const server = await startServer(sb, ['--no-auth']);
      try {
        await new Promise((res) => setTimeout(res, 300));
        assert.ok(!server.output().includes('svc storage vacuum'), server.output());
      } finally {
        await server.stop();
      }
    });

    it('--only restricts it to the named databases, and a wrong name is refused', () => {
      const r = svc(sb, ['storage', 'vacuum', '--db', sb.db, '--only', 'ui']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^DATABASE/);
      assert.equal(r.stdout.trim().split('\n').length, 2, r.stdout);
      assert.notEqual(svc(sb, ['storage', 'vacuum', '--db', sb.db, '--only', 'queues']).code, 0);
    });
  },
);
