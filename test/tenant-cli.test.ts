/** Black-box: `svc tenant` create, list, disable and enable, with their audit entries and refusals. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { makeSandbox, onlyOn, svc, type Sandbox } from './helpers/svc.js';

interface TenantJson {
  id: string;
  display_name: string;
  status: string;
  auth_methods: string[];
  created_at: string;
}

interface AuditJson {
  seq: number;
  event_type: string;
  created_at: string;
  correlation_id: string;
  payload: Record<string, unknown>;
}

const tenants = (sb: Sandbox): TenantJson[] => {
  const r = svc(sb, ['tenant', 'list', '--json', '--db', sb.db]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as TenantJson[];
};

const auditOf = (sb: Sandbox, tenant: string): AuditJson[] => {
  const r = svc(sb, ['audit', '--tenant', tenant, '--json', '-l', '1000', '--db', sb.db]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as AuditJson[];
};

describe('svc tenant', () => {
  const sb = makeSandbox();
  after(() => sb.cleanup());

  it('create registers an active tenant with api_key and audits tenant.registered', () => {
    const r = svc(sb, ['tenant', 'create', '--id', 'acme', '--display-name', 'Acme Corp', '--db', sb.db]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /registered tenant acme/);
    const [t] = tenants(sb);
    assert.equal(t!.id, 'acme');
    assert.equal(t!.display_name, 'Acme Corp');
    assert.equal(t!.status, 'active');
    assert.deepEqual(t!.auth_methods, ['api_key']);
    assert.match(t!.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const entries = auditOf(sb, 'acme');
    assert.deepEqual(
      entries.map((e) => [e.seq, e.event_type]),
      [[1, 'tenant.registered']],
    );
    assert.match(entries[0]!.correlation_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('list shows id, display name, status, auth methods and created_at', () => {
    const r = svc(sb, ['tenant', 'list', '--db', sb.db]);
    assert.equal(r.code, 0, r.stderr);
    const [header, row] = r.stdout.trim().split('\n');
    assert.match(header!, /ID\s+DISPLAY NAME\s+STATUS\s+AUTH METHODS\s+CREATED_AT/);
    assert.match(row!, /^acme\s+Acme Corp\s+active\s+api_key\s+\d{4}-\d{2}-\d{2}T/);
  });

  it('accepts --auth-methods api_key explicitly', () => {
    const r = svc(sb, [
      'tenant',
      'create',
      '--id',
      'explicit',
      '--display-name',
      'Explicit',
      '--auth-methods',
      'api_key',
      '--db',
      sb.db,
    ]);
    assert.equal(r.code, 0, r.stderr);
  });

  it('refuses a duplicate id with exit 1 and writes no second audit entry', () => {
    const r = svc(sb, ['tenant', 'create', '--id', 'acme', '--display-name', 'Again', '--db', sb.db]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /tenant "acme" already exists/);
    assert.equal(tenants(sb).find((t) => t.id === 'acme')!.display_name, 'Acme Corp');
    assert.equal(auditOf(sb, 'acme').length, 1);
  });

  it('refuses any auth method other than api_key, naming the accepted one, and creates nothing', () => {
    for (const methods of ['oauth2', 'api_key,basic', 'API_KEY', '']) {
      const r = svc(sb, [
        'tenant',
        'create',
        '--id',
        'authy',
        '--display-name',
        'Authy',
        '--auth-methods',
        methods,
        '--db',
        sb.db,
      ]);
      assert.notEqual(r.code, 0, `--auth-methods ${JSON.stringify(methods)} was accepted`);
      assert.match(r.stderr, /api_key/);
    }
    assert.equal(
      tenants(sb).some((t) => t.id === 'authy'),
      false,
    );
    assert.equal(auditOf(sb, 'authy').length, 0);
  });

  it('refuses a tenant id that breaks the name rule, says why, and creates nothing (not even the state directory)', () => {
    const fresh = makeSandbox();
    try {
      const cases: [string, RegExp][] = [
        ['Acme', /must start with a lowercase letter or digit/],
        ['-acme', /must start with a lowercase letter or digit/],
        ['ac me', /may hold only lowercase letters/],
        ['acme.corp', /may hold only lowercase letters/],
        ['a'.repeat(129), /longer than 128 bytes/],
        ['', /is empty/],
      ];
      for (const [id, why] of cases) {
        const r = svc(fresh, ['tenant', 'create', '--id', id, '--display-name', 'X', '--db', fresh.db]);
        assert.notEqual(r.code, 0, `id ${JSON.stringify(id)} was accepted`);
        assert.match(r.stderr, why);
      }
      assert.equal(existsSync(dirname(fresh.db)), false);
      assert.deepEqual(tenants(fresh), []);
      assert.equal(
        svc(fresh, ['tenant', 'create', '--id', 'a'.repeat(128), '--display-name', 'X', '--db', fresh.db]).code,
        0,
      );
    } finally {
      fresh.cleanup();
    }
  });

  it('refuses a missing or blank display name', () => {
    assert.notEqual(svc(sb, ['tenant', 'create', '--id', 'nameless', '--db', sb.db]).code, 0);
    const r = svc(sb, ['tenant', 'create', '--id', 'nameless', '--display-name', '  ', '--db', sb.db]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /must not be empty/);
    assert.equal(
      tenants(sb).some((t) => t.id === 'nameless'),
      false,
    );
  });

  it('follows the state table: one audit entry per real transition, none for a no-op', () => {
    const run = (...args: string[]) => svc(sb, ['tenant', ...args, '--db', sb.db]);
    svc(sb, ['tenant', 'create', '--id', 'flip', '--display-name', 'Flip', '--db', sb.db]);

    const enableActive = run('enable', '--id', 'flip');
    assert.equal(enableActive.code, 0, enableActive.stderr);
    assert.match(enableActive.stdout, /already enabled/);

    const disable = run('disable', '--id', 'flip');
    assert.equal(disable.code, 0, disable.stderr);
    assert.match(disable.stdout, /tenant flip disabled/);
    assert.equal(tenants(sb).find((t) => t.id === 'flip')!.status, 'disabled');

    const disableAgain = run('disable', '--id', 'flip');
    assert.equal(disableAgain.code, 0, 'disabling a disabled tenant succeeds');
    assert.match(disableAgain.stdout, /already disabled/);

    const enable = run('enable', '--id', 'flip');
    assert.equal(enable.code, 0, enable.stderr);
    assert.equal(tenants(sb).find((t) => t.id === 'flip')!.status, 'active');

    assert.deepEqual(
      auditOf(sb, 'flip').map((e) => [e.seq, e.event_type]),
      [
        [1, 'tenant.registered'],
        [2, 'tenant.disabled'],
        [3, 'tenant.enabled'],
      ],
    );
    const verify = svc(sb, ['audit', '--tenant', 'flip', '--verify', '--db', sb.db]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /OK \(3 entries/);
  });

  it('refuses to disable or enable an unregistered tenant with exit 1, naming tenant create', () => {
    for (const verb of ['disable', 'enable']) {
      const r = svc(sb, ['tenant', verb, '--id', 'ghost', '--db', sb.db]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /tenant "ghost" is not registered/);
      assert.match(r.stderr, /svc tenant create --id ghost --display-name/);
    }
    assert.equal(auditOf(sb, 'ghost').length, 0);
  });

  it('refuses a disable/enable --id that breaks the name rule', () => {
    const r = svc(sb, ['tenant', 'disable', '--id', 'ACME', '--db', sb.db]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /tenant "ACME"/);
  });

  it('list on a state directory that does not exist says so and creates nothing', () => {
    const fresh = makeSandbox();
    try {
      const r = svc(fresh, ['tenant', 'list', '--db', fresh.db]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /No tenants registered/);
      assert.equal(JSON.parse(svc(fresh, ['tenant', 'list', '--json', '--db', fresh.db]).stdout).length, 0);
      assert.equal(existsSync(dirname(fresh.db)), false);
    } finally {
      fresh.cleanup();
    }
  });

  it(
    'defaults --db to ~/.svc/registry.db, with audit.db beside it',
    {
      skip: onlyOn(
        'sqlite',
        'the default state directory; with SVC_STORE_URL set a command uses that store instead (test/cli-store-pg.test.ts: SVC_STORE_URL works like --store)',
      ),
    },
    () => {
      const fresh = makeSandbox();
      try {
        assert.equal(svc(fresh, ['tenant', 'create', '--id', 'homed', '--display-name', 'Home']).code, 0);
        assert.ok(existsSync(join(fresh.home, '.svc', 'registry.db')));
        assert.ok(existsSync(join(fresh.home, '.svc', 'audit.db')));
        const r = svc(fresh, ['audit', '--tenant', 'homed']);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /tenant\.registered/);
      } finally {
        fresh.cleanup();
      }
    },
  );
});
