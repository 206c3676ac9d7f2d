/**
 * Black-box: a full disk on the PostgreSQL server of a `svc serve --store` node. The test's schema
 * lives on a tablespace of its own on a small tmpfs (test/helpers/pg-tablespace.ts): once the
 * tmpfs is full every table that must grow fails with SQLSTATE 53100 ("could not extend file ...
 * No space left on device"), as on a database volume that filled up, while the server's WAL stays
 * on its own disk. Under an /enqueue storm: every answer is 202 or the spec's 500, a 500 stored
 * nothing, the gate and /run never pass what they could not decide, the node stays up and says why
 * in its log without the store's password; once space is back, without a restart, every message
 * acknowledged before and after is delivered (counted at an HTTP stub), and the audit chain verifies.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DELIVER_STEP, startDeliveryBackend, type DeliveryBackend } from './helpers/delivery-backend.js';
import { reportedLostRows } from './helpers/log-reads.js';
import { adminQuery, freshPgSchema, type PgSchema } from './helpers/pg.js';
import { tmpfsTablespace, type TmpfsTablespace } from './helpers/pg-tablespace.js';
import { EnqueueStorm } from './helpers/enqueue-storm.js';
import { flowSource } from './helpers/queue-flows.js';
import { ON_PG_STORE, makeSandbox, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { fillBut } from './helpers/tmpfs.js';
import { waitFor } from './helpers/wait.js';

/** Fast retries, many attempts: a message refused once by the backend is retried at once (a retry row written while full). */
const DELIVER = flowSource(
  'deliver',
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
/** /run that writes nothing on the request path (its audit and event rows are written behind it). */
const ECHO = flowSource('echo', [], '## Step: answer\n```ntd\n{"n": "{{ ctx.input.n }}"}\n```\n');
/** /run that must record its dedup claim before it runs: with no room for it, it must not run. */
const ONCE = flowSource('once', ['dedup_key: ctx.input.id', 'effects: [http_egress]'], DELIVER_STEP);

/** Deployed while full: its artifact (made large and incompressible) has to grow the artifacts' TOAST table. */
const LATE = flowSource(
  'late',
  [],
  `## Step: answer\n\`\`\`ntd\n{"pad": "${randomBytes(16 * 1024).toString('hex')}"}\n\`\`\`\n`,
);

/** The tmpfs under the schema's tablespace. Only written pages count. */
const TMPFS_MIB = 32;
/** Room left on it once the ballast is written: the storm fills it within a second or two. */
const HEADROOM_BYTES = 512 * 1024;
const CLIENTS = 8;
/** Every fourth submission goes to the doomed flow. */
const DOOMED_EVERY = 4;
/** Refusals before the storm stops. */
const STORM_500S = 300;
/** Longest one request may take before it counts as a hang. */
const REQUEST_TIMEOUT_MS = 15_000;
const INTERNAL_ERROR = '{"ok":false,"error":"internal error"}';
/** In the store URL: trust authentication ignores it, so a leak of it into any output would show. */
const PASSWORD = 'pgdisk-Secret-7f3a';

/** The backend refuses the first call of ids ending in an odd digit: those are retried once (a retry row each). */
const refusedFirst = (id: string) => /[13579]$/.test(id);

describe(
  'a full disk on the PostgreSQL server (the schema on a tablespace on a small tmpfs)',
  { skip: ON_PG_STORE ? 'runs in the default pass only: it makes its own schema and tablespace' : undefined },
  () => {
    const sandbox: Sandbox = makeSandbox();
    let schema: PgSchema | undefined;
    let tablespace: TmpfsTablespace | undefined;
    let skipReason: string | undefined;
    let store = '';
    let backend: DeliveryBackend | undefined;
    let server: ServerProcess | undefined;
    let key = '';
    let spareKey = { id: 0, key: '' };
    /** Every output of every command and of the server, searched for the password at the end. */
    const outputs: string[] = [];

    const cli = (args: string[]) => {
      const r = svc(sandbox, [...args, '--store', store]);
      outputs.push(r.stdout, r.stderr);
      return r;
    };
    const must = (args: string[]) => {
      const r = cli(args);
      assert.equal(r.code, 0, `svc ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const deploy = (text: string, name: string) => {
      const file = join(sandbox.home, `${name}.flow.md`);
      writeFileSync(file, text);
      must(['deploy', file, '-v', '1']);
    };

    before(async () => {
      const made = await tmpfsTablespace(TMPFS_MIB);
      if (typeof made === 'string') {
        skipReason = made;
        return;
      }
      tablespace = made;
      schema = await freshPgSchema('svcdisk');
      const url = new URL(schema.url);
      if (url.password === '') url.password = PASSWORD;
      store = url.toString();
      // The CLI migrates the schema; then every relation of it moves onto the tmpfs.
      must(['tenant', 'create', '--id', 'acme', '--display-name', 'Acme']);
      key = (JSON.parse(must(['keys', 'create', '--tenant', 'acme', '--label', 'main', '--json'])) as { key: string })
        .key;
      spareKey = JSON.parse(must(['keys', 'create', '--tenant', 'acme', '--label', 'spare', '--json'])) as {
        id: number;
        key: string;
      };
      deploy(DELIVER, 'deliver');
      deploy(DOOMED, 'doomed');
      deploy(ECHO, 'echo');
      deploy(ONCE, 'once');
      await tablespace.moveSchema(schema.name);
      backend = await startDeliveryBackend({ failFirstCall: refusedFirst });
    });

    after(async () => {
      await server?.stop();
      await backend?.close();
      try {
        await schema?.drop();
      } finally {
        await tablespace?.drop();
        sandbox.cleanup();
      }
    });

    it(
      'answers 202 only for what it wrote, refuses rather than passes, and recovers without a restart',
      { timeout: 240_000 },
      async (t) => {
        if (skipReason !== undefined) return t.skip(skipReason);
        const ts = tablespace!;
        const schemaName = schema!.name;
        server = await startServer(sandbox, ['--store', store], {
          BACKEND_URL: backend!.url,
          SVC_SECRET_SVC_STATE_KEY: 'pgdisk-state-key-0123456789',
        });
        const pid = server.child.pid;

        const storm = new EnqueueStorm(() => server!.url, key, REQUEST_TIMEOUT_MS);
        const send = (flow: string, cid: string) => storm.send(flow, cid);
        /** POST /flows/acme/<flow>/run, with `bearer` as the key when given. */
        const run = async (flow: string, body: unknown, bearer: string | undefined, cid: string) => {
          const headers: Record<string, string> = {
            'content-type': 'application/json',
            'x-correlation-id': cid,
            ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
          };
          const res = await fetch(`${server!.url}/flows/acme/${flow}/run`, {
            method: 'POST',
            headers,
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          });
          return { status: res.status, text: await res.text() };
        };

        // Both queue workers start (on a first submission); the first message is delivered.
        assert.equal(await send('deliver', 'warm-0'), 202);
        assert.equal(await send('doomed', 'warm-doomed'), 202);
        await waitFor('the first message delivered', () => backend!.delivered.has('warm-0'), 15_000);
        assert.equal((await run('echo', { n: 1 }, key, 'run-warm')).status, 200);

        // The disk fills but for the headroom, and an /enqueue storm uses that up.
        fillBut(join(ts.mountDir, 'ballast'), ts.mountDir, HEADROOM_BYTES);
        const refused = await storm.run({
          clients: CLIENTS,
          flow: 'deliver',
          other: { flow: 'doomed', everyNth: DOOMED_EVERY },
          stopAfter500s: STORM_500S,
        });
        storm.assertFilled(refused, STORM_500S, INTERNAL_ERROR);

        // Whatever room autovacuum or the storm's end gave back is taken too: from here nothing can grow.
        fillBut(join(ts.mountDir, 'ballast-2'), ts.mountDir, 0);
        assert.equal((await fetch(`${server.url}/health`)).status, 200, 'still up while full');
        // The gate decides from the node's copy of the registry: a good key passes, a bad one is refused.
        assert.equal(
          (await run('echo', { n: 2 }, key, 'run-full')).status,
          200,
          'a /run that writes nothing on its path still answers',
        );
        assert.equal((await run('echo', { n: 3 }, undefined, 'run-nokey')).status, 401);
        assert.equal((await run('echo', { n: 4 }, `svk_${'0'.repeat(32)}`, 'run-badkey')).status, 401);
        // A dedup claim that cannot be written: 503, and the flow did not run.
        const claim = await run('once', { id: 'while-full' }, key, 'once-while-full');
        assert.equal(claim.status, 503, claim.text);
        assert.match(claim.text, /state unavailable/);
        assert.equal(
          backend!.called.has('once-while-full'),
          false,
          'a /run whose dedup claim was not written does not run',
        );
        // A revoke while full either fails whole or takes effect: the gate never passes a key the store revoked.
        const revoke = cli(['keys', 'revoke', '--id', String(spareKey.id)]);
        const revokedWhileFull = revoke.code === 0;
        await waitFor(
          revokedWhileFull ? 'the revoked key refused' : 'the key, not revoked, still accepted',
          async () =>
            (await run('echo', { n: 5 }, spareKey.key, `spare-${Date.now()}`)).status ===
            (revokedWhileFull ? 401 : 200),
          3000,
          100,
        );
        // A deploy while full is one transaction: it fails whole, saying why, and nothing of it is served.
        const lateFile = join(sandbox.home, 'late.flow.md');
        writeFileSync(lateFile, LATE);
        const lateWhileFull = cli(['deploy', lateFile, '-v', '1']);
        assert.equal(lateWhileFull.code, 1, lateWhileFull.stdout);
        assert.match(lateWhileFull.stderr, /No space left on device/);
        assert.equal((await run('late', {}, key, 'late-while-full')).status, 404);
        const log = server.stderr();
        assert.match(log, /queue write failed; \/enqueue answered 500/);
        assert.match(log, /No space left on device/, 'the node says why');

        // Space comes back: the same process takes writes again.
        rmSync(join(ts.mountDir, 'ballast'));
        rmSync(join(ts.mountDir, 'ballast-2'));
        let n = 0;
        await waitFor(
          'a 202 once space is back',
          async () => (await send('deliver', `after-${n++}`)) === 202,
          30_000,
          100,
        );
        for (let i = 0; i < 20; i++)
          assert.equal(await send(i % DOOMED_EVERY === DOOMED_EVERY - 1 ? 'doomed' : 'deliver', `back-${i}`), 202);
        const claimed = await run('once', { id: 'after' }, key, 'once-after');
        assert.equal(claimed.status, 200, claimed.text);
        must(['deploy', lateFile, '-v', '1']);
        await waitFor(
          'the flow deployed after space came back served',
          async () => (await run('late', {}, key, `late-${Date.now()}`)).status === 200,
          3000,
          100,
        );
        if (!revokedWhileFull) must(['keys', 'revoke', '--id', String(spareKey.id)]);
        await waitFor(
          'the spare key refused once revoked',
          async () => (await run('echo', { n: 6 }, spareKey.key, `spare-after-${Date.now()}`)).status === 401,
          3000,
          100,
        );

        const delivered = storm.acked('deliver');
        const doomed = storm.acked('doomed');
        const refusedCids = storm.refused();
        const deadByCid = async () => {
          const r = await adminQuery<{ cid: string; n: number }>(
            `SELECT payload::json->>'cid' AS cid, count(*)::int AS n FROM ${schemaName}.queue_dead_letters GROUP BY 1`,
          );
          return new Map(r.rows.map((row) => [row.cid, row.n]));
        };
        await waitFor(
          `${delivered.length} acknowledged messages delivered`,
          () => delivered.every((cid) => backend!.delivered.has(cid)),
          60_000,
          200,
        );
        await waitFor(
          `${doomed.length} dead letters`,
          async () => {
            const dead = await deadByCid();
            return doomed.every((cid) => dead.has(cid));
          },
          60_000,
          500,
        );
        await waitFor(
          'every queue empty',
          async () =>
            (await adminQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schemaName}.queue_messages`)).rows[0]!
              .n === 0,
          30_000,
          200,
        );
        await waitFor(
          `${delivered.length} processed entries on the audit chain`,
          async () => {
            const r = await adminQuery<{ cid: string }>(
              `SELECT DISTINCT correlation_id AS cid FROM ${schemaName}.audit_entries WHERE event_type = 'queue.message.processed'`,
            );
            const audited = new Set(r.rows.map((row) => row.cid));
            return delivered.every((cid) => audited.has(cid));
          },
          30_000,
          500,
        );

        const dead = await deadByCid();
        const twiceDelivered = delivered.filter((cid) => backend!.delivered.get(cid)! > 1);
        const refusedButRun = refusedCids.filter((cid) => backend!.called.has(cid) || dead.has(cid));
        const workerErrors = server
          .stderr()
          .split('\n')
          .filter((l) => l.includes('queue worker storage error')).length;
        // The event log may lose rows while full, but never silently: every missing row is counted on stderr.
        const logged = await adminQuery<{ event: string; cid: string }>(
          `SELECT event, correlation_id AS cid FROM ${schemaName}.events WHERE event IN ('queue_enqueued', 'queue_processed')`,
        );
        const rowsOf = (event: string) => new Set(logged.rows.filter((r) => r.event === event).map((r) => r.cid));
        const enqueuedRows = rowsOf('queue_enqueued');
        const processedRows = rowsOf('queue_processed');
        const missingRows =
          [...delivered, ...doomed].filter((cid) => !enqueuedRows.has(cid)).length +
          delivered.filter((cid) => !processedRows.has(cid)).length;
        const lostReported = reportedLostRows(server.stderr());
        t.diagnostic(
          `acked ${delivered.length} + ${doomed.length} doomed, refused ${refusedCids.length}, revoke while full ${revokedWhileFull ? 'took effect' : `failed (${revoke.stderr.trim()})`}, ` +
            `worker storage errors ${workerErrors}, delivered twice ${twiceDelivered.length}, refused but run ${refusedButRun.length}, log rows missing ${missingRows}, reported lost ${lostReported}`,
        );
        assert.deepEqual(refusedButRun, [], 'a 500 means the message was not stored');
        assert.deepEqual(twiceDelivered, [], 'no acknowledged message is delivered twice (no node died)');
        assert.deepEqual(
          doomed.filter((cid) => dead.get(cid)! > 1),
          [],
          'no message is dead-lettered twice',
        );
        assert.ok(lostReported >= missingRows, `${missingRows} event rows missing, ${lostReported} reported lost`);
        const verified = must(['audit', '--tenant', 'acme', '--verify']);
        assert.match(verified, /: OK \(/);

        assert.equal(server.child.pid, pid, 'the same process throughout');
        assert.equal(await server.stop(), 0, 'a clean stop');
        outputs.push(server.output(), server.stderr());
        const password = new URL(store).password;
        const leaks = outputs.filter((o) => o.includes(password));
        assert.deepEqual(leaks, [], 'the store password appears in no output');
      },
    );
  },
);
