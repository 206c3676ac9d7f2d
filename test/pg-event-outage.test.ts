/**
 * The event log's PostgreSQL writer through a lost database (issue 33, item 8): the rows of every
 * batch emitted while the database is away, and of the batch in flight when it went, are kept and
 * written once it is back, in order, none lost (docs/scale-out.md, A lost database). Past
 * its bound of held rows (MAX_HELD_ROWS, set small here) the log drops and counts instead of
 * growing without bound.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openStore, type PgStores } from '../src/storage/index.js';
import { EventLog } from '../src/store/event-log/event-log.js';
import { adminQuery, freshPgSchema, PG_TEST_URL, type PgSchema } from './helpers/pg.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { sleep } from './helpers/wait.js';

let schema: PgSchema;
let direct: PgStores;
let proxy: TcpProxy;
let viaProxy: PgStores;

before(async () => {
  schema = await freshPgSchema('svcevo');
  direct = (await openStore(schema.url, { pg: { maxConnections: 2 } })) as PgStores; // migrates
  const pgUrl = new URL(PG_TEST_URL);
  proxy = await TcpProxy.start(pgUrl.hostname, Number(pgUrl.port || 5432));
  const url = new URL(schema.url);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  viaProxy = (await openStore(url.toString(), { pg: { maxConnections: 2 } })) as PgStores;
});
after(async () => {
  await viaProxy?.close().catch(() => undefined);
  await direct?.close();
  await proxy?.close();
  await schema?.drop();
});

const rowsOf = async (flow: string): Promise<string[]> =>
  (
    await adminQuery<{ correlation_id: string }>(
      `SELECT correlation_id FROM ${schema.name}.events WHERE flow = $1 ORDER BY id`,
      [flow],
    )
  ).rows.map((r) => r.correlation_id);

test('rows emitted while the database is away are written once it is back, in order, none lost', async () => {
  const errors: string[] = [];
  const log = new EventLog({ pg: viaProxy.db, onError: (e) => errors.push(e.message) });
  const emit = (i: number) =>
    log.emit({ event: 'received', correlation_id: `c-${String(i).padStart(3, '0')}`, tenant: 'acme', flow: 'outage' });
  for (let i = 0; i < 50; i++) emit(i);
  await log.flush();
  await proxy.cut();
  // The batch in flight as the connection goes, and every one after it for three seconds.
  for (let i = 50; i < 300; i++) {
    emit(i);
    if (i % 25 === 0) await sleep(300);
  }
  await sleep(1000);
  assert.ok(log.queuedRows > 0, 'rows are held while the database is away');
  assert.equal(log.droppedRows, 0);
  await proxy.restore();
  await log.flush();
  const rows = await rowsOf('outage');
  assert.equal(rows.length, 300, `rows written: ${rows.length}; errors: ${errors.join(' | ')}`);
  assert.deepEqual(rows, [...rows].sort(), 'in the order they were emitted');
  assert.equal(log.droppedRows, 0);
  assert.deepEqual(errors, []);
  await log.close();
});

test('a log closing while the database is away gives up after its grace period, counting the rows', async () => {
  const errors: string[] = [];
  const log = new EventLog({ pg: viaProxy.db, onError: (e) => errors.push(e.message) });
  await proxy.cut();
  for (let i = 0; i < 10; i++)
    log.emit({ event: 'received', correlation_id: `z-${i}`, tenant: 'acme', flow: 'closing' });
  const started = Date.now();
  await log.close();
  const took = Date.now() - started;
  assert.ok(took < 10_000, `close took ${took} ms`);
  assert.equal(log.droppedRows, 10);
  assert.match(errors.join('\n'), /10 event row\(s\) not written/);
  await proxy.restore();
});

test('past its bound of held rows, a log drops and counts new batches instead of growing', async () => {
  const errors: string[] = [];
  const log = new EventLog({
    pg: viaProxy.db,
    maxHeldRows: 20,
    flushIntervalMs: 1,
    onError: (e) => errors.push(e.message),
  });
  await proxy.cut();
  for (let i = 0; i < 10; i++) log.emit({ event: 'received', correlation_id: `h-${i}`, tenant: 'acme', flow: 'held' });
  await sleep(50);
  for (let i = 10; i < 40; i++) log.emit({ event: 'received', correlation_id: `h-${i}`, tenant: 'acme', flow: 'held' });
  await sleep(50);
  assert.equal(log.droppedRows, 30, errors.join('\n'));
  assert.match(errors[0] ?? '', /30 event row\(s\) not written \(30 lost since start\): 10 rows are already held/);
  await proxy.restore();
  await log.close();
  assert.equal((await rowsOf('held')).length, 10, 'the held rows are written');
});
