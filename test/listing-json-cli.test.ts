/** `--json` on the listings that lacked it: `svc state list`, `svc proto show`, `svc config check` (same exit status as the text form). */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { greeterSet } from './helpers/grpc.js';
import { createTenant, deployFlow, flow, withRegistry } from './helpers/registry-setup.js';
import { makeSandbox, svc } from './helpers/svc.js';

const BODY = '## Step: answer\n```ntd\n{"ok": true}\n```';

describe('--json on every listing', () => {
  const sandbox = makeSandbox();
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) => svc(sandbox, [...args, '--db', sandbox.db], { env });

  before(() => {
    createTenant(sandbox, 'acme');
    deployFlow(sandbox, flow('acme', 'pricing', 'config: [pricing_url]', BODY));
    const set = join(sandbox.home, 'greeter.pb');
    writeFileSync(set, greeterSet());
    assert.equal(
      run(['proto', 'deploy', set, '--tenant', 'acme', '--name', 'greeter', '--version', '1', '--latest']).code,
      0,
    );
    withRegistry(sandbox, (db) => {
      db.prepare(
        "INSERT INTO flow_inbox (tenant, flow, key_hash, status, claimed_at, expires_at, lease_expires_at, first_correlation_id, response_status, response_headers, response_body, finished_at) VALUES ('acme', 'pricing', 'ab12', 'done', '2026-01-01T00:00:00Z', '2099-01-01T00:00:00Z', NULL, 'c-1', 200, '{}', '{\"memoized\":\"secret-answer\"}', '2026-01-01T00:00:01Z')",
      ).run();
      db.prepare(
        "INSERT INTO flow_correlations (tenant, flow, key_hash, step, status, opened_at, deadline, on_timeout_flow, correlation_id, state, closed_at) VALUES ('acme', 'pricing', 'cd34', 'answer', 'open', '2026-01-01T00:00:00Z', '2099-01-01T00:00:00Z', NULL, 'c-2', '{\"card\":\"secret-state\"}', NULL)",
      ).run();
    });
  });
  after(() => sandbox.cleanup());

  it("state list --json gives both sections with the table's fields, never a memoized answer or correlation state", () => {
    const r = run(['state', 'list', '--status', 'all', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const parsed = JSON.parse(r.stdout) as {
      deduplication: Record<string, unknown>[];
      correlations: Record<string, unknown>[];
    };
    assert.deepEqual(
      parsed.deduplication.map((d) => [d.flow, d.status, d.key_hash, d.first_correlation_id]),
      [['pricing', 'done', 'ab12', 'c-1']],
    );
    assert.deepEqual(
      parsed.correlations.map((c) => [c.flow, c.status, c.key_hash, c.state_recorded]),
      [['pricing', 'open', 'cd34', true]],
    );
    assert.doesNotMatch(r.stdout, /secret-answer|secret-state/);
    assert.deepEqual(JSON.parse(run(['state', 'list', '--tenant', 'other', '--json']).stdout), {
      deduplication: [],
      correlations: [],
    });
  });

  it('proto show --json gives the version and its services with method kinds and message types', () => {
    const r = run(['proto', 'show', '--tenant', 'acme', '--name', 'greeter', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const shown = JSON.parse(r.stdout) as {
      name: string;
      version: string;
      latest: boolean;
      hash: string;
      services: {
        full_name: string;
        methods: { full_name: string; kind: string; callable: boolean; request_type: string }[];
      }[];
    };
    assert.equal(shown.name, 'greeter');
    assert.equal(shown.version, '1');
    assert.equal(shown.latest, true);
    assert.match(shown.hash, /^[0-9a-f]{64}$/);
    const methods = shown.services.flatMap((s) => s.methods);
    assert.ok(methods.length > 0);
    assert.ok(
      methods.every(
        (m) =>
          m.full_name.includes('/') &&
          typeof m.callable === 'boolean' &&
          m.request_type !== '' &&
          !m.request_type.startsWith('.'),
      ),
    );
  });

  it('config check --json lists each key with its state and keeps the exit status (1 on MISSING)', () => {
    const missing = run(['config', 'check', '--json'], { SVC_CONFIG_PRICING_URL: undefined });
    assert.equal(missing.code, 1);
    const report = JSON.parse(missing.stdout) as {
      keys: { tenant: string; flow: string; key: string; variable: string; state: string }[];
      unreadable: unknown[];
    };
    assert.deepEqual(report.keys, [
      { tenant: 'acme', flow: 'pricing', key: 'pricing_url', variable: 'SVC_CONFIG_PRICING_URL', state: 'MISSING' },
    ]);
    assert.deepEqual(report.unreadable, []);
    const set = run(['config', 'check', '--json'], { SVC_CONFIG_PRICING_URL: 'https://hidden.example' });
    assert.equal(set.code, 0, set.stderr);
    assert.equal((JSON.parse(set.stdout) as typeof report).keys[0]!.state, 'set');
    assert.doesNotMatch(set.stdout, /hidden\.example/);
  });
});
