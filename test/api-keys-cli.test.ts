/** Black-box: `svc keys` create, list and revoke: what is printed, what is stored (only the hash) and what is refused. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { storedText, storeRows } from './helpers/store-sql.js';
import { makeSandbox, svc, type Sandbox } from './helpers/svc.js';

interface KeyJson {
  id: number;
  tenant: string;
  label: string;
  status: string;
  scopes: string[];
  flows: string[];
  rate_limit: number | null;
  burst: number | null;
  expires_at: string | null;
  revoked_at: string | null;
  created_at: string;
  key?: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('svc keys', () => {
  const sb: Sandbox = makeSandbox();
  const run = (...args: string[]) => svc(sb, [...args, '--db', sb.db]);
  const create = (...args: string[]) => run('keys', 'create', '--tenant', 'acme', ...args);
  const list = (tenant = 'acme'): KeyJson[] => {
    const r = run('keys', 'list', '--tenant', tenant, '--json');
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as KeyJson[];
  };

  before(() => {
    assert.equal(run('tenant', 'create', '--id', 'acme', '--display-name', 'Acme').code, 0);
    assert.equal(run('tenant', 'create', '--id', 'sleepy', '--display-name', 'Sleepy').code, 0);
    assert.equal(run('tenant', 'disable', '--id', 'sleepy').code, 0);
  });
  after(() => sb.cleanup());

  it('create prints id, tenant, label, scopes, flows, rate limit with burst and the raw key once', () => {
    const r = create(
      '--label',
      'orders-bot',
      '--scopes',
      'read,write',
      '--flows',
      'orders,billing',
      '--rate-limit',
      '5',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /id:\s+\d+/);
    assert.match(r.stdout, /tenant:\s+acme/);
    assert.match(r.stdout, /label:\s+orders-bot/);
    assert.match(r.stdout, /scopes:\s+read,write/);
    assert.match(r.stdout, /flows:\s+orders,billing/);
    assert.match(r.stdout, /rate limit:\s+5 req\/s \(burst 10\)/);
    const keys = r.stdout.match(/svk_[0-9a-f]+/g) ?? [];
    assert.equal(keys.length, 1, 'the raw key is printed exactly once');
    assert.match(keys[0]!, /^svk_[0-9a-f]{32}$/);
    assert.match(r.stderr, /shown only this once/);
  });

  it('stores only the SHA-256 of the key, never the key itself', () => {
    const r = create('--label', 'hash-check', '--json');
    assert.equal(r.code, 0, r.stderr);
    const created = JSON.parse(r.stdout) as KeyJson;
    const raw = created.key!;
    const [row] = storeRows<{ key_hash: string }>(
      sb,
      'registry',
      'SELECT key_hash FROM api_keys WHERE id = ?',
      created.id,
    );
    assert.equal(row!.key_hash, sha256(raw));
    const stored = storedText(sb);
    assert.ok(stored.includes(sha256(raw)), 'the stored text holds the hash (so the two checks below can fail)');
    assert.equal(stored.includes(raw), false, 'the raw key must not be in the registry');
    assert.equal(stored.includes(raw.slice(4)), false, 'the key body must not be in the registry');
  });

  it('two keys are different, and created keys use the CSPRNG format', () => {
    const a = JSON.parse(create('--label', 'a', '--json').stdout) as KeyJson;
    const b = JSON.parse(create('--label', 'b', '--json').stdout) as KeyJson;
    assert.notEqual(a.key, b.key);
    assert.notEqual(a.id, b.id);
  });

  it('defaults to every scope (*), every flow and no rate limit', () => {
    const r = create('--label', 'defaults');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /scopes:\s+\*/);
    assert.match(r.stdout, /flows:\s+\(all flows\)/);
    assert.match(r.stdout, /rate limit:\s+unlimited/);
    const k = list().find((x) => x.label === 'defaults')!;
    assert.deepEqual(k.scopes, ['*']);
    assert.deepEqual(k.flows, []);
    assert.equal(k.rate_limit, null);
    assert.equal(k.expires_at, null);
  });

  it('a fractional rate limit gets a burst of twice the rate', () => {
    const r = create('--label', 'slow', '--rate-limit', '2.5');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /2\.5 req\/s \(burst 5\)/);
  });

  it('refuses a rate limit that is not a positive number', () => {
    for (const bad of ['0', '-1', 'abc', '']) {
      const r = create('--label', 'bad-rate', '--rate-limit', bad);
      assert.notEqual(r.code, 0, `--rate-limit ${JSON.stringify(bad)} was accepted`);
      assert.match(r.stderr, /positive number/);
    }
    assert.equal(
      list().some((k) => k.label === 'bad-rate'),
      false,
    );
  });

  it('reads a bare --expires-at day as 23:59:59Z that day, and accepts a UTC instant', () => {
    assert.equal(create('--label', 'day', '--expires-at', '2031-03-15').code, 0);
    assert.equal(create('--label', 'instant', '--expires-at', '2031-03-15T08:30:00Z').code, 0);
    const keys = list();
    assert.equal(keys.find((k) => k.label === 'day')!.expires_at, '2031-03-15T23:59:59Z');
    assert.equal(keys.find((k) => k.label === 'instant')!.expires_at, '2031-03-15T08:30:00Z');
    assert.equal(keys.find((k) => k.label === 'day')!.status, 'active');
  });

  it('refuses an --expires-at with a timezone offset, saying so', () => {
    for (const ts of ['2031-03-15T08:30:00+02:00', '2031-03-15T08:30:00-05:00']) {
      const r = create('--label', 'offset', '--expires-at', ts);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /timezone offset/);
    }
    assert.equal(
      list().some((k) => k.label === 'offset'),
      false,
    );
  });

  it('refuses an invalid --expires-at date', () => {
    for (const ts of ['2031-02-30', '2031-13-01', '2031-03-15T25:00:00Z', 'next week', '2031-03-15T08:30:00']) {
      const r = create('--label', 'bad-date', '--expires-at', ts);
      assert.equal(r.code, 1, `--expires-at ${ts} was accepted`);
      assert.match(r.stderr, /YYYY-MM-DD/);
    }
    assert.equal(
      list().some((k) => k.label === 'bad-date'),
      false,
    );
  });

  it('a key whose expiry has passed is listed as expired (and creating one warns)', () => {
    const r = create('--label', 'stale', '--expires-at', '2020-01-01');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /already passed/);
    assert.equal(list().find((k) => k.label === 'stale')!.status, 'expired');
  });

  it('refuses a --flows entry that breaks the name rule, and creates nothing', () => {
    const r = create('--label', 'bad-flow', '--flows', 'orders,Billing');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /flow "Billing"/);
    assert.equal(
      list().some((k) => k.label === 'bad-flow'),
      false,
    );
  });

  it('refuses a key for an unregistered tenant, naming tenant create', () => {
    const r = run('keys', 'create', '--tenant', 'ghost', '--label', 'x');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /tenant "ghost" is not registered/);
    assert.match(r.stderr, /svc tenant create --id ghost --display-name/);
    assert.equal(r.stdout.includes('svk_'), false);
  });

  it('refuses a key for a disabled tenant, naming tenant enable', () => {
    const r = run('keys', 'create', '--tenant', 'sleepy', '--label', 'x');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /tenant "sleepy" is disabled/);
    assert.match(r.stderr, /svc tenant enable --id sleepy/);
    assert.equal(list('sleepy').length, 0);
  });

  it('refuses a --tenant that breaks the name rule', () => {
    const r = run('keys', 'create', '--tenant', 'Acme', '--label', 'x');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /tenant "Acme"/);
  });

  it('list shows id, label, status, flows, scopes and created_at, never the key or its hash', () => {
    const created = JSON.parse(
      create('--label', 'listed', '--flows', 'orders', '--scopes', 'read', '--json').stdout,
    ) as KeyJson;
    const r = run('keys', 'list', '--tenant', 'acme');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /ID\s+LABEL\s+STATUS\s+FLOWS\s+SCOPES\s+CREATED_AT/);
    const row = lines.find((l) => l.startsWith(`${created.id} `))!;
    assert.match(row, new RegExp(`^${created.id}\\s+listed\\s+active\\s+orders\\s+read\\s+\\d{4}-`));
    assert.equal(r.stdout.includes(created.key!), false);
    assert.equal(r.stdout.includes(sha256(created.key!)), false);
    assert.equal(run('keys', 'list', '--tenant', 'acme', '--json').stdout.includes(sha256(created.key!)), false);
  });

  it('revoke marks the key revoked; revoking again, or a missing key, exits 1', () => {
    const created = JSON.parse(create('--label', 'doomed', '--json').stdout) as KeyJson;
    const r = run('keys', 'revoke', '--id', String(created.id));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`revoked API key ${created.id}`));
    const k = list().find((x) => x.id === created.id)!;
    assert.equal(k.status, 'revoked');
    assert.match(k.revoked_at!, /Z$/);

    const again = run('keys', 'revoke', '--id', String(created.id));
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already revoked/);

    const missing = run('keys', 'revoke', '--id', '99999');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /API key 99999 does not exist/);

    assert.notEqual(run('keys', 'revoke', '--id', 'abc').code, 0);
  });

  it('an expired key that is revoked shows revoked', () => {
    const created = JSON.parse(
      create('--label', 'old-and-revoked', '--expires-at', '2020-01-01T00:00:00Z', '--json').stdout,
    ) as KeyJson;
    assert.equal(created.status, 'expired');
    assert.equal(run('keys', 'revoke', '--id', String(created.id)).code, 0);
    assert.equal(list().find((x) => x.id === created.id)!.status, 'revoked');
  });

  it('list refuses an unregistered tenant with exit 1', () => {
    const r = run('keys', 'list', '--tenant', 'ghost');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not registered/);
  });

  it('keys of a disabled tenant stay listed', () => {
    assert.equal(run('tenant', 'disable', '--id', 'acme').code, 0);
    try {
      assert.ok(list().length > 0);
    } finally {
      assert.equal(run('tenant', 'enable', '--id', 'acme').code, 0);
    }
  });
});
