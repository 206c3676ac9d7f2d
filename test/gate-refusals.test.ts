import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { auditRows, logRows, waitForLogRows } from './helpers/log-reads.js';
import { rawRequest } from './helpers/raw-http.js';
import {
  createKey,
  createTenant,
  deployAll,
  inForce,
  keyIdOf,
  revokeKey,
  setTenantEnabled,
  withRegistry,
} from './helpers/registry-setup.js';
import { makeSandbox, ON_PG_STORE, onlyOn, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const UNAUTHORIZED = { ok: false, error: 'unauthorized' };

describe('the gate on key-protected routes', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  const keys: Record<string, string> = {};

  const run = (flow: string, auth: string | undefined, headers: Record<string, string> = {}, tenant = 'acme') =>
    fetch(`${server.url}/flows/${tenant}/${flow}/run`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(auth === undefined ? {} : { authorization: auth }),
        ...headers,
      },
      body: '{"a":1}',
    });
  const bearer = (name: string) => `Bearer ${keys[name]}`;

  const auditOf = (tenant: string) => {
    const r = svc(sandbox, ['audit', '--tenant', tenant, '--json', '--limit', '1000', '--db', sandbox.db]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { event_type: string; payload: Record<string, unknown> }[];
  };
  const deniedOn = (tenant: string) => auditOf(tenant).filter((e) => e.event_type === 'access.denied');
  /** Polls audit.db directly (cheap) until the chain of `tenant` has more than `count` entries. */
  const waitForAudit = (tenant: string, count: number) =>
    waitFor(`more than ${count} entries on the chain of ${tenant}`, () => auditRows(sandbox, tenant).length > count);

  before(async () => {
    createTenant(sandbox, 'acme');
    createTenant(sandbox, 'other');
    createTenant(sandbox, 'gone');
    keys.all = createKey(sandbox, 'acme');
    keys.read = createKey(sandbox, 'acme', { scopes: 'orders:read' });
    keys.write = createKey(sandbox, 'acme', { scopes: 'orders:write' });
    keys.echoOnly = createKey(sandbox, 'acme', { flows: 'echo' });
    keys.writeEchoOnly = createKey(sandbox, 'acme', { scopes: 'orders:write', flows: 'echo' });
    keys.readSecureOnly = createKey(sandbox, 'acme', { scopes: 'orders:read', flows: 'secure' });
    keys.revoked = createKey(sandbox, 'acme');
    keys.expired = createKey(sandbox, 'acme', { expiresAt: '2020-01-01' });
    keys.other = createKey(sandbox, 'other');
    keys.gone = createKey(sandbox, 'gone');
    revokeKey(sandbox, keys.revoked);
    await deployAll(sandbox, ['echo', 'secure']);
    // A key whose tenant row has vanished: the tenant is unregistered while its key still exists.
    withRegistry(sandbox, (db) => {
      // Past the foreign key, as a damaged registry would be: SQLite's pragma, PostgreSQL's replica role.
      db.exec(
        ON_PG_STORE
          ? "SET LOCAL session_replication_role = replica; DELETE FROM tenants WHERE id = 'gone'"
          : "PRAGMA foreign_keys = OFF; DELETE FROM tenants WHERE id = 'gone'",
      );
    });
    // A short folding window: these tests repeat one refusal (same key, flow and reason) many times.
    server = await startServer(sandbox, [], { SVC_TEST_REFUSAL_WINDOW_MS: '1000' });
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  describe('(a) the key', () => {
    it('answers 401 with WWW-Authenticate: Bearer when the header is missing', async () => {
      const res = await run('echo', undefined);
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
      assert.deepEqual(await res.json(), UNAUTHORIZED);
    });

    for (const [label, value] of [
      ['a Basic header', 'Basic dXNlcjpwYXNz'],
      ['Bearer without a token', 'Bearer '],
      ['a token without the Bearer word', 'svk_00000000000000000000000000000000'],
      ['two tokens', 'Bearer a b'],
    ] as const) {
      it(`answers 401 unauthorized for a malformed header (${label})`, async () => {
        const res = await run('echo', value);
        assert.equal(res.status, 401);
        assert.deepEqual(await res.json(), UNAUTHORIZED);
      });
    }

    it('answers 401 for an unknown key', async () => {
      const res = await run('echo', 'Bearer svk_0123456789abcdef0123456789abcdef');
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), UNAUTHORIZED);
    });

    it('answers 401 for a revoked key', async () => {
      const res = await run('echo', bearer('revoked'));
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), UNAUTHORIZED);
    });

    it('answers 401 for an expired key', async () => {
      const res = await run('echo', bearer('expired'));
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), UNAUTHORIZED);
    });

    it('answers 401 for a key of another tenant, on every gated route', async () => {
      const res = await run('echo', bearer('other'));
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), UNAUTHORIZED);
      const meta = await fetch(`${server.url}/flows/acme/echo`, { headers: { authorization: bearer('other') } });
      assert.equal(meta.status, 401);
      const conn = await fetch(`${server.url}/connector/events/acme/echo`, {
        method: 'POST',
        headers: { authorization: bearer('other') },
        body: '{"event_type":"connector_received"}',
      });
      assert.equal(conn.status, 401);
    });

    it('passes a valid key of the tenant', async () => {
      const res = await run('echo', bearer('all'));
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { a: 1 });
    });

    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      it(`passes a valid key under the scheme written "${scheme}" (the scheme is case-insensitive, RFC 9110 11.1)`, async () => {
        const res = await run('echo', `${scheme} ${keys.all}`);
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), { a: 1 });
      });
    }

    it('answers 401 to a request carrying two Authorization headers, even when both hold the valid key', async () => {
      for (const second of [bearer('all'), bearer('other')]) {
        const body = '{"a":1}';
        const head = `POST /flows/acme/echo/run HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer('all')}\r\nAuthorization: ${second}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
        const res = await rawRequest(server.port, head, { untilClose: true });
        assert.equal(res.status, 401, res.raw);
        assert.match(res.body, /"error":"unauthorized"/);
      }
      await waitFor(
        'the access_denied row naming the two headers',
        () =>
          logRows(sandbox, { event: 'access_denied' }).some(
            (r) => r.reason === '2 Authorization headers (one is required)',
          ) || undefined,
      );
    });

    it('answers 401, not 413, to a caller without a key announcing an oversized body', async () => {
      const head = [
        'POST /flows/acme/echo/run HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        'Content-Type: application/json',
        'Content-Length: 50000000',
        '',
        '',
      ].join('\r\n');
      const res = await rawRequest(server.port, head, { untilClose: true, waitMs: 3000 });
      assert.equal(res.status, 401);
      assert.match(res.body, /"unauthorized"/);
      assert.ok(res.closed, 'the server closes the connection instead of reading the unread body');
    });

    it('keeps the connection after refusing a small declared body (discarded), and closes it above 16 KiB', async () => {
      const refused = (bytes: number) => {
        const body = `{"pad":"${'x'.repeat(bytes - 10)}"}`;
        assert.equal(body.length, bytes);
        return `POST /flows/acme/echo/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer svk_${'0'.repeat(32)}\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n${body}`;
      };
      // Two refused requests pipelined on one connection, each with a 16 KiB body: both answered, none closing.
      const kept = await rawRequest(server.port, refused(16 * 1024) + refused(16 * 1024), {
        untilClose: true,
        waitMs: 1500,
      });
      assert.equal(kept.raw.match(/HTTP\/1\.1 401 /g)?.length, 2, kept.raw);
      assert.doesNotMatch(kept.raw, /connection: close/i);
      assert.equal(kept.closed, false);
      // One byte more: the body is not read, and the connection is closed.
      const closed = await rawRequest(server.port, refused(16 * 1024 + 1), { untilClose: true, waitMs: 3000 });
      assert.equal(closed.status, 401);
      assert.match(closed.head, /connection: close/i);
      assert.ok(closed.closed);
    });

    it('does not invite the body (no 100 Continue) before refusing a caller without a key', async () => {
      const head = [
        'POST /flows/acme/echo/run HTTP/1.1',
        `Host: 127.0.0.1:${server.port}`,
        'Content-Type: application/json',
        'Content-Length: 2',
        'Expect: 100-continue',
        '',
        '',
      ].join('\r\n');
      const res = await rawRequest(server.port, head);
      assert.equal(res.status, 401);
      assert.doesNotMatch(res.raw, /100 Continue/);
    });
  });

  describe('(b) the tenant', () => {
    it('answers 404 exactly like a missing flow for an unregistered tenant', async () => {
      const res = await run('echo', bearer('gone'), {}, 'gone');
      assert.equal(res.status, 404);
      assert.deepEqual(await res.json(), { ok: false, error: "flow 'gone/echo' not found" });
    });

    it('answers 404 exactly like a missing flow for a disabled tenant, and passes again at once when enabled', async () => {
      const missing = await run('no-such-flow', bearer('all'));
      const missingBody = await missing.text();
      setTenantEnabled(sandbox, 'acme', false);
      try {
        // A deployed flow is 404 once the change is in force (a --store node applies it milliseconds later).
        const deployed = await inForce(
          () => run('echo', bearer('all')),
          (r) => r.status === 404,
        );
        assert.equal(deployed.status, 404);
        assert.deepEqual(await deployed.json(), { ok: false, error: "flow 'acme/echo' not found" });
        const res = await run('no-such-flow', bearer('all'));
        assert.equal(res.status, 404);
        assert.equal(res.headers.get('content-type'), missing.headers.get('content-type'));
        assert.equal(await res.text(), missingBody);
        const meta = await fetch(`${server.url}/flows/acme/echo`, { headers: { authorization: bearer('all') } });
        assert.equal(meta.status, 404);
      } finally {
        setTenantEnabled(sandbox, 'acme', true);
      }
      const back = await inForce(
        () => run('echo', bearer('all')),
        (r) => r.status === 200,
      );
      assert.equal(back.status, 200);
    });
  });

  describe('(c) scope and (d) allowlist', () => {
    it('answers 403 forbidden: insufficient scope for a key without the required scope', async () => {
      const res = await run('secure', bearer('read'));
      assert.equal(res.status, 403);
      assert.deepEqual(await res.json(), { ok: false, error: 'forbidden: insufficient scope' });
    });

    it('passes the exact scope and the * scope', async () => {
      assert.equal((await run('secure', bearer('write'))).status, 200);
      assert.equal((await run('secure', bearer('all'))).status, 200);
    });

    it('lets any active key of the tenant through a flow without required_scope', async () => {
      assert.equal((await run('echo', bearer('read'))).status, 200);
    });

    it('answers 403 forbidden: flow not permitted for this key outside the allowlist', async () => {
      const res = await run('secure', bearer('echoOnly'));
      assert.equal(res.status, 403);
      assert.deepEqual(await res.json(), { ok: false, error: 'forbidden: flow not permitted for this key' });
      assert.equal((await run('echo', bearer('echoOnly'))).status, 200);
    });

    it('refuses a scope-satisfying key outside the allowlist', async () => {
      const res = await run('secure', bearer('writeEchoOnly'));
      assert.equal(res.status, 403);
      assert.deepEqual(await res.json(), { ok: false, error: 'forbidden: flow not permitted for this key' });
    });

    it('refuses an allowlisted key without the scope', async () => {
      const res = await run('secure', bearer('readSecureOnly'));
      assert.equal(res.status, 403);
      assert.deepEqual(await res.json(), { ok: false, error: 'forbidden: insufficient scope' });
    });

    it('applies scope and allowlist on the metadata route too', async () => {
      const res = await fetch(`${server.url}/flows/acme/secure`, { headers: { authorization: bearer('read') } });
      assert.equal(res.status, 403);
      const ok = await fetch(`${server.url}/flows/acme/secure`, { headers: { authorization: bearer('write') } });
      assert.equal(ok.status, 200);
    });
  });

  describe('what a refusal records', () => {
    it('writes access_denied with the operator-facing reason and no received row', async () => {
      const res = await run('secure', bearer('read'), { 'x-correlation-id': 'refused-scope-1' });
      assert.equal(res.status, 403);
      const id = keyIdOf(sandbox, keys.read!);
      // The row of this refusal: earlier tests left access_denied rows of the same flow and key.
      const rows = await waitForLogRows(sandbox, { event: 'access_denied', correlation_id: 'refused-scope-1' });
      assert.equal(rows.length, 1);
      const row = rows.find((r) => r.reason?.includes(`API key ${id}`));
      assert.ok(row, `the access_denied row names key ${id}: ${JSON.stringify(rows)}`);
      assert.equal(row.flow, 'secure');
      assert.match(row.reason!, /scope/);
      assert.equal(row.http_status, 403);
      assert.equal(row.tenant, 'acme');
      assert.equal(row.step, null);
      // A passing request afterwards is logged, so the batch holding the refusal is flushed too.
      await run('echo', bearer('all'), { 'x-correlation-id': 'after-refusal-1' });
      await waitForLogRows(sandbox, { event: 'completed', correlation_id: 'after-refusal-1' });
      assert.deepEqual(logRows(sandbox, { correlation_id: 'refused-scope-1', event: 'received' }), []);
      assert.deepEqual(
        logRows(sandbox, { flow: 'secure', event: 'received', tenant: 'acme' }).filter(
          (r) => r.correlation_id === 'refused-scope-1',
        ),
        [],
      );
    });

    it("writes access.denied on the key's tenant chain, never the path's", async () => {
      const beforeOther = deniedOn('other').length;
      const beforeAcme = deniedOn('acme').length;
      const chain = auditRows(sandbox, 'other').length;
      assert.equal((await run('echo', bearer('other'))).status, 401);
      await waitForAudit('other', chain);
      const entries = deniedOn('other');
      assert.equal(entries.length, beforeOther + 1);
      assert.match(JSON.stringify(entries.at(-1)), /acme\/echo/);
      assert.equal(deniedOn('acme').length, beforeAcme);
    });

    it('writes an access.denied entry for a policy verdict (scope) on the tenant chain', async () => {
      const before = deniedOn('acme').length;
      const chain = auditRows(sandbox, 'acme').length;
      assert.equal((await run('secure', bearer('read'))).status, 403);
      await waitForAudit('acme', chain);
      assert.equal(deniedOn('acme').length, before + 1);
    });

    it('writes no audit entry for a refusal with no subject (missing header, unknown key)', async () => {
      const before = auditOf('acme').length;
      assert.equal((await run('echo', undefined, { 'x-correlation-id': 'no-subject-1' })).status, 401);
      assert.equal((await run('echo', 'Bearer svk_ffffffffffffffffffffffffffffffff')).status, 401);
      // Flush marker: a later policy verdict does land, so the earlier two had their chance.
      assert.equal((await run('secure', bearer('read'))).status, 403);
      await waitForAudit('acme', before);
      const added = auditOf('acme').slice(before);
      assert.equal(added.length, 1, JSON.stringify(added));
      assert.match(JSON.stringify(added[0]), /secure/);
      // Still logged: the row of this refusal (earlier tests left rows with the same reason).
      const rows = await waitForLogRows(sandbox, { event: 'access_denied', correlation_id: 'no-subject-1' });
      assert.equal(rows[0]!.reason, 'missing Authorization header');
    });
  });

  // On PostgreSQL the gate reads the registry copy in memory; its storage failure (the database
  // cut away) is tested in test/unit/store/pg/pg-registry-mirror.test.ts and test/cluster-pg.test.ts.
  describe(
    '(f) storage failure',
    { skip: onlyOn('sqlite', 'the gate reads the SQLite tables on each request') },
    () => {
      it('answers 503 authorization temporarily unavailable, never a pass, when the key table cannot be read', async () => {
        withRegistry(sandbox, (db) => db.exec('ALTER TABLE api_keys RENAME TO api_keys_away'));
        try {
          for (const auth of [bearer('all'), 'Bearer svk_0123456789abcdef0123456789abcdef']) {
            const res = await run('echo', auth);
            assert.equal(res.status, 503);
            assert.deepEqual(await res.json(), { ok: false, error: 'authorization temporarily unavailable' });
          }
          const meta = await fetch(`${server.url}/flows/acme/echo`, { headers: { authorization: bearer('all') } });
          assert.equal(meta.status, 503);
        } finally {
          withRegistry(sandbox, (db) => db.exec('ALTER TABLE api_keys_away RENAME TO api_keys'));
        }
        assert.equal((await run('echo', bearer('all'))).status, 200);
        const rows = await waitForLogRows(sandbox, { event: 'access_denied', http_status: 503 });
        assert.ok(rows.length >= 1);
        assert.match(rows[0]!.reason ?? '', /storage unavailable/);
      });

      it('answers 503 when the tenant table cannot be read', async () => {
        withRegistry(sandbox, (db) =>
          db.exec(
            'PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON; ALTER TABLE tenants RENAME TO tenants_away',
          ),
        );
        try {
          const res = await run('echo', bearer('all'));
          assert.equal(res.status, 503);
          assert.deepEqual(await res.json(), { ok: false, error: 'authorization temporarily unavailable' });
        } finally {
          withRegistry(sandbox, (db) =>
            db.exec(
              'PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON; ALTER TABLE tenants_away RENAME TO tenants',
            ),
          );
        }
        assert.equal((await run('echo', bearer('all'))).status, 200);
      });
    },
  );
});
