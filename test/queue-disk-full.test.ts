import Database from 'better-sqlite3';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import { DELIVER_STEP, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { jsonlEvents, reportedLostRows } from './helpers/log-reads.js';
import { EnqueueStorm } from './helpers/enqueue-storm.js';
import { events, flowSource, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { fillBut, mountTmpfs, unmountTmpfs } from './helpers/tmpfs.js';
import { waitFor } from './helpers/wait.js';
import { makeSandbox, onlyOn, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';

/**
 * Each delivery calls the test's backend, which refuses the first call of every message: so every
 * message is also rescheduled once, and the worker keeps writing retry records (with the payload)
 * to its consumer log while the disk is full, not just the odd checkpoint.
 */
const FILLER = flowSource(
  'filler',
  [
    'effects: [http_egress]',
    'log_level: full',
    'queue_max_attempts: 1000',
    'queue_initial_delay_ms: 50',
    'queue_backoff_factor: 1.0',
    'queue_max_delay_ms: 50',
  ],
  DELIVER_STEP,
);
/** Fails at once (an unset secret) and is dead-lettered on its first attempt: dead letters are written while full. */
const DOOMED = flowSource(
  'doomed',
  ['effects: [secret_read]', 'queue_max_attempts: 1'],
  '## Step: never_set_q\neffects: [secret_read]\n',
);

/** The tmpfs holding the whole sandbox (HOME and the state directory). Only written pages count. */
const TMPFS_MIB = 64;
/** Room left on it once the ballast is written: a storm fills it within a second or two. */
const HEADROOM_BYTES = 1024 * 1024;
const CLIENTS = 16;
/** Every fourth submission goes to the doomed flow. */
const DOOMED_EVERY = 4;
/** Refusals before the storm stops: the disk stays full while the worker works off its backlog. */
const STORM_500S = 1000;
/** Longest one /enqueue may take before it counts as a hang. */
const REQUEST_TIMEOUT_MS = 15_000;
const INTERNAL_ERROR = '{"ok":false,"error":"internal error"}';

/** Processed entries per correlation id on the audit chain (its writer retries a failed batch until it is written). */
function auditedProcessed(sandbox: Sandbox): Map<string, number> {
  const db = new Database(statePaths(sandbox.db).auditDb, { readonly: true, fileMustExist: true, timeout: 5000 });
  try {
    const rows = db
      .prepare(
        "SELECT correlation_id AS cid, count(*) AS n FROM audit_entries WHERE event_type = 'queue.message.processed' GROUP BY correlation_id",
      )
      .all() as { cid: string; n: number }[];
    return new Map(rows.map((r) => [r.cid, r.n]));
  } finally {
    db.close();
  }
}

/** Dead letters of the doomed flow per correlation id (carried in the payload: a dead letter keeps none of its own). */
function deadLetters(sandbox: Sandbox): Map<string, number> {
  const r = svc(sandbox, ['dlq', 'list', '--tenant', 'acme', '--flow', 'doomed', '--json', '--db', sandbox.db]);
  assert.equal(r.code, 0, r.stderr);
  const byCid = new Map<string, number>();
  for (const e of JSON.parse(r.stdout) as { payload: { cid: string } }[])
    byCid.set(e.payload.cid, (byCid.get(e.payload.cid) ?? 0) + 1);
  return byCid;
}

describe(
  'a full disk under an /enqueue storm (the whole state directory on a small tmpfs)',
  {
    skip: onlyOn(
      'sqlite',
      'the state directory on a full tmpfs; with --store the queue is in PostgreSQL, whose full disk is test/queue-pg-disk-full.test.ts',
    ),
  },
  () => {
    const sandbox = makeSandbox();
    const ballast = join(sandbox.home, 'ballast');
    let onTmpfs = false;
    let backend: DeliveryBackend | undefined;
    let server: ServerProcess | undefined;
    let key = '';

    before(async () => {
      onTmpfs = mountTmpfs(sandbox.home, TMPFS_MIB);
      if (!onTmpfs) return;
      key = tenantWithKey(sandbox);
      deployFlow(sandbox, FILLER);
      deployFlow(sandbox, DOOMED);
      backend = await startDeliveryBackend({ failFirstCall: () => true });
    });
    after(async () => {
      await server?.stop();
      await backend?.close();
      if (onTmpfs) await unmountTmpfs(sandbox.home);
      sandbox.cleanup();
    });

    it('answers the spec 500 while full, stays up, and once space returns every 202 is processed exactly once', async (t) => {
      if (!onTmpfs) return t.skip('needs root to mount a small tmpfs');
      const start = () => startServer(sandbox, [], { BACKEND_URL: backend!.url });
      server = await start();
      const storm = new EnqueueStorm(() => server!.url, key, REQUEST_TIMEOUT_MS);
      const send = (flow: string, cid: string) => storm.send(flow, cid);

      // Both workers start (they start on a first submission), then the disk is filled but for the headroom.
      assert.equal(await send('filler', 'warm'), 202);
      assert.equal(await send('doomed', 'warm-doomed'), 202);
      await waitFor('the first message delivered', () => backend!.delivered.has('warm'), 15_000);
      fillBut(ballast, sandbox.home, HEADROOM_BYTES);

      const refused = await storm.run({
        clients: CLIENTS,
        flow: 'filler',
        other: { flow: 'doomed', everyNth: DOOMED_EVERY },
        stopAfter500s: STORM_500S,
      });
      storm.assertFilled(refused, STORM_500S, INTERNAL_ERROR);
      // Still up while full, and still refusing.
      assert.equal((await fetch(`${server.url}/health`)).status, 200);
      assert.equal(await send('filler', 'while-full'), 500);

      rmSync(ballast);
      let n = 0;
      await waitFor(
        'a 202 once space is back',
        async () => (await send('filler', `after-${n++}`)) === 202,
        30_000,
        100,
      );
      const filler = storm.acked('filler');
      const doomed = storm.acked('doomed');
      const refusedCids = storm.refused();

      // Every acknowledged message is delivered; the audit chain and the DLQ catch up.
      await waitFor(
        `${filler.length} acknowledged messages delivered`,
        () => filler.every((cid) => backend!.delivered.has(cid)),
        60_000,
        100,
      );
      await waitFor(
        `${filler.length} processed entries on the audit chain`,
        () => {
          const audited = auditedProcessed(sandbox);
          return filler.every((cid) => audited.has(cid));
        },
        30_000,
        200,
      );
      await waitFor(
        `${doomed.length} dead letters`,
        () => {
          const dead = deadLetters(sandbox);
          return doomed.every((cid) => dead.has(cid));
        },
        30_000,
        500,
      );
      const workerStorageErrors = server
        .stderr()
        .split('\n')
        .filter((l) => l.includes('queue worker storage error')).length;
      assert.equal(await server.stop(), 0, 'a clean stop');
      const stderrBeforeRestart = server.stderr();

      const twiceDelivered = filler.filter((cid) => backend!.delivered.get(cid)! > 1);
      const audited = auditedProcessed(sandbox);
      const twiceAudited = filler.filter((cid) => audited.get(cid)! > 1);
      const dead = deadLetters(sandbox);
      const twiceDead = doomed.filter((cid) => dead.get(cid)! > 1);
      const refusedButRun = refusedCids.filter((cid) => backend!.called.has(cid) || dead.has(cid));
      // The event log may lose rows while full, but never silently: every missing row is counted on stderr.
      const logged = events(sandbox, "event IN ('queue_enqueued', 'queue_processed')");
      const rowsOf = (event: string) => new Set(logged.filter((r) => r.event === event).map((r) => r.correlation_id));
      const enqueuedRows = rowsOf('queue_enqueued');
      const processedRows = rowsOf('queue_processed');
      const missingRows =
        [...filler, ...doomed].filter((cid) => !enqueuedRows.has(cid)).length +
        filler.filter((cid) => !processedRows.has(cid)).length;
      // The daily file too; every line of it parses (a write cut short must not swallow the next row).
      const lines = jsonlEvents(sandbox);
      const linesOf = (event: string) => new Set(lines.filter((l) => l.event === event).map((l) => l.correlation_id));
      const enqueuedLines = linesOf('queue_enqueued');
      const processedLines = linesOf('queue_processed');
      const missingLines =
        [...filler, ...doomed].filter((cid) => !enqueuedLines.has(cid)).length +
        filler.filter((cid) => !processedLines.has(cid)).length;
      const lostReported = reportedLostRows(stderrBeforeRestart);
      t.diagnostic(
        `acked ${filler.length} + ${doomed.length} doomed, refused ${refusedCids.length}, worker storage errors ${workerStorageErrors}, ` +
          `delivered twice ${twiceDelivered.length}, refused but run ${refusedButRun.length}, log rows missing ${missingRows} (file lines ${missingLines}), reported lost ${lostReported}`,
      );
      assert.deepEqual(twiceDelivered, [], 'no acknowledged message is delivered twice');
      assert.deepEqual(twiceAudited, [], 'one processed entry per message on the audit chain');
      assert.deepEqual(twiceDead, [], 'no message is dead-lettered twice');
      assert.deepEqual(refusedButRun, [], 'a 500 means the message was not stored');
      assert.ok(
        lostReported >= Math.max(missingRows, missingLines),
        `${missingRows} event rows (${missingLines} file lines) missing, ${lostReported} reported lost`,
      );
      assert.equal(svc(sandbox, ['dlq', 'list', '--flow', 'filler', '--db', sandbox.db]).stdout, 'DLQ is empty.\n');

      // A clean restart reads the consumer logs written through the full disk: nothing is delivered again.
      const callsBefore = backend!.calls();
      server = await start();
      assert.equal(await send('filler', 'restart-probe'), 202);
      assert.equal(await send('doomed', 'restart-probe-doomed'), 202);
      // Delivery is FIFO on first delivery: a checkpoint fallen back would deliver old messages before the probe.
      await waitFor('the probe delivered', () => backend!.delivered.has('restart-probe'), 30_000);
      await waitFor(
        'the doomed probe dead-lettered',
        () => deadLetters(sandbox).has('restart-probe-doomed'),
        30_000,
        500,
      );
      assert.equal(
        backend!.calls() - callsBefore,
        2,
        'only the probe is delivered after the restart (its refused first call, then its retry)',
      );
      assert.equal(
        [...deadLetters(sandbox).values()].reduce((a, b) => a + b, 0),
        doomed.length + 1,
        'only the doomed probe is dead-lettered after the restart',
      );
    });
  },
);
