/**
 * Black-box: the operator commands with `--store <postgres URL>` (and SVC_STORE_URL) work on the
 * PostgreSQL store as they do on a state directory, refuse `--db` beside it, and never print the
 * URL's password. The URL carries one (trust authentication ignores it) so that a leak would show.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { adminQuery, freshPgSchema, type PgSchema } from './helpers/pg.js';
import { makeSandbox, svc as runSvc, type CliResult } from './helpers/svc.js';

const PASSWORD = 'secretpw';
const sb = makeSandbox();
let schema: PgSchema;
let store: string;
/** Every output of every command run, searched for the password at the end. */
const outputs: string[] = [];

function withPassword(url: string): string {
  const u = new URL(url);
  u.password = PASSWORD;
  return u.toString();
}

function svc(args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): CliResult {
  const r = runSvc(sb, args, opts);
  outputs.push(r.stdout, r.stderr);
  return r;
}

/** Runs a command on the store and expects exit 0. */
function ok(...args: string[]): CliResult {
  const r = svc([...args, '--store', store]);
  assert.equal(r.code, 0, `svc ${args.join(' ')}: ${r.stderr}`);
  return r;
}

function json<T>(...args: string[]): T {
  return JSON.parse(ok(...args, '--json').stdout) as T;
}

const flowText = (flow: string, tenant = 'acme') => `---\nflowdoc_version: "0.1"\nflow: ${flow}\ntenant: ${tenant}\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "there"}\n\`\`\`\n`;

let dirs = 0;
function folder(files: Record<string, string>): string {
  const dir = join(sb.home, `flows-${++dirs}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** `tenant/flow@version` of every published version in the schema, sorted. */
async function published(): Promise<string[]> {
  const r = await adminQuery<{ v: string }>(`SELECT tenant || '/' || name || '@' || version AS v FROM ${schema.name}.flow_versions ORDER BY v`);
  return r.rows.map((row) => row.v);
}

describe('operator commands on --store', () => {
  before(async () => {
    schema = await freshPgSchema('svccli');
    store = withPassword(schema.url);
  });
  after(async () => {
    sb.cleanup();
    await schema?.drop();
  });

  it('tenant create, list and disable work on the store, with the state directory untouched', () => {
    const created = ok('tenant', 'create', '--id', 'acme', '--display-name', 'Acme');
    assert.match(created.stdout, /^registered tenant acme\n {2}display name: Acme\n {2}status: {7}active\n/);
    ok('tenant', 'create', '--id', 'other', '--display-name', 'Other');
    ok('tenant', 'create', '--id', 'gone', '--display-name', 'Gone');
    assert.equal(ok('tenant', 'disable', '--id', 'gone').stdout, 'tenant gone disabled\n');
    assert.equal(ok('tenant', 'disable', '--id', 'gone').stdout, 'tenant gone was already disabled; nothing changed\n');
    const tenants = json<{ id: string; status: string }[]>('tenant', 'list');
    assert.deepEqual(tenants.map((t) => [t.id, t.status]), [['acme', 'active'], ['gone', 'disabled'], ['other', 'active']]);
    assert.equal(existsSync(join(sb.home, '.svc')), false, 'no state directory was created');
  });

  it('an unknown tenant is refused with exit 1, as on the state directory', () => {
    const r = svc(['tenant', 'disable', '--id', 'nobody', '--store', store]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /nobody/);
  });

  it('keys create, list and revoke', () => {
    const key = json<{ id: number; key: string; status: string }>('keys', 'create', '--tenant', 'acme', '--label', 'ci');
    assert.match(key.key, /^svk_/);
    assert.equal(key.status, 'active');
    assert.deepEqual(json<{ id: number; label: string }[]>('keys', 'list', '--tenant', 'acme').map((k) => [k.id, k.label]), [[key.id, 'ci']]);
    assert.match(ok('keys', 'revoke', '--id', String(key.id)).stdout, new RegExp(`^revoked API key ${key.id} \\(tenant acme, label ci\\)`));
    assert.equal(json<{ status: string }[]>('keys', 'list', '--tenant', 'acme')[0]!.status, 'revoked');
  });

  it('deploy publishes one file, then a directory of flows all at once', async () => {
    const one = join(folder({ 'hello.flow.md': flowText('hello') }), 'hello.flow.md');
    const r = ok('deploy', one, '-v', '1.0.0');
    assert.match(r.stdout, /^deployed\n {2}flow: {4}hello\n {2}tenant: {2}acme\n {2}version: 1\.0\.0\n {2}hash: {4}[0-9a-f]{64}\n {2}db: {6}postgres:\/\/postgres:\*\*\*@/);
    const dir = folder({ 'a.flow.md': flowText('a'), 'b.flow.md': flowText('b', 'other') });
    const many = ok('deploy', dir, '-v', '2.0.0');
    assert.match(many.stdout, /deployed 2 flows to postgres:\/\/postgres:\*\*\*@/);
    assert.deepEqual(await published(), ['acme/a@2.0.0', 'acme/hello@1.0.0', 'other/b@2.0.0']);
  });

  it('a refused deploy names every refused file and publishes nothing', async () => {
    const dir = folder({ 'c.flow.md': flowText('c'), 'd.flow.md': flowText('d', 'gone'), 'a.flow.md': flowText('a') });
    const r = svc(['deploy', dir, '-v', '2.0.0', '--store', store, '--json']);
    assert.equal(r.code, 1);
    const body = JSON.parse(r.stdout) as { deployed: unknown[]; refused: { file: string; message: string }[] };
    assert.deepEqual(body.deployed, []);
    assert.deepEqual(body.refused.map((x) => x.file), [join(dir, 'a.flow.md'), join(dir, 'd.flow.md')]);
    assert.match(body.refused[0]!.message, /acme\/a.*2\.0\.0/);
    assert.equal(body.refused[1]!.message, 'tenant "gone" is disabled; enable it first: svc tenant enable --id gone');
    assert.match(r.stderr, /2 of 3 files refused; nothing was published/);
    assert.deepEqual(await published(), ['acme/a@2.0.0', 'acme/hello@1.0.0', 'other/b@2.0.0']);
  });

  it('flows list shows the latest versions from the store', () => {
    const flows = json<{ tenant: string; flow: string; version: string }[]>('flows', 'list');
    assert.deepEqual(flows.map((f) => `${f.tenant}/${f.flow}@${f.version}`), ['acme/a@2.0.0', 'acme/hello@1.0.0', 'other/b@2.0.0']);
  });

  it('trace enable turns tracing on and trace list shows it', () => {
    assert.equal(ok('trace', 'enable', '--tenant', 'acme', '--flow', 'hello').stdout, 'tracing of acme/hello is now on\n');
    assert.deepEqual(json<{ tenant: string; flow: string; enabled: boolean }[]>('trace', 'list').map((f) => [f.tenant, f.flow, f.enabled]), [['acme', 'hello', true]]);
  });

  it('cert add and cert list', () => {
    const pem = join(sb.home, 'partner.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(sb.home, 'partner.key'), '-out', pem, '-days', '300', '-subj', '/CN=partner.example'], { stdio: 'ignore' });
    assert.match(ok('cert', 'add', pem, '--tenant', 'acme', '--name', 'partner').stdout, /^registered certificate partner of acme \(client_cert\)/);
    assert.deepEqual(json<{ name: string; status: string }[]>('cert', 'list', '--tenant', 'acme').map((c) => [c.name, c.status]), [['partner', 'valid']]);
  });

  it('ui user add and list', () => {
    const r = svc(['ui', 'user', 'add', '--username', 'alice', '--role', 'sysadmin', '--store', store], { input: 'a long enough password 1\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(json<{ username: string; role: string }[]>('ui', 'user', 'list').map((u) => [u.username, u.role]), [['alice', 'sysadmin']]);
  });

  it('audit --verify passes on every chain those commands wrote', () => {
    for (const tenant of ['acme', 'gone', 'other']) {
      const r = json<{ ok: boolean; count: number }>('audit', '--tenant', tenant, '--verify');
      assert.equal(r.ok, true);
      assert.ok(r.count >= 1, `${tenant} has entries`);
    }
    assert.deepEqual(json<{ event_type: string }[]>('audit', '--tenant', 'gone').map((e) => e.event_type), ['tenant.registered', 'tenant.disabled']);
  });

  it('logs, dlq list, state list and proto list read the store (empty here)', () => {
    const logs = ok('logs');
    assert.equal(logs.stdout, '');
    assert.equal(logs.stderr, 'No log rows match.\n');
    assert.equal(ok('dlq', 'list').stdout, 'DLQ is empty.\n');
    assert.deepEqual(json<unknown>('state', 'list'), { deduplication: [], correlations: [] });
    assert.equal(ok('proto', 'list', '--tenant', 'acme').stdout, 'No descriptors for tenant acme.\n');
  });

  it('SVC_STORE_URL works like --store', () => {
    const r = svc(['tenant', 'list', '--json'], { env: { SVC_STORE_URL: store } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((JSON.parse(r.stdout) as { id: string }[]).map((t) => t.id), ['acme', 'gone', 'other']);
  });

  it('--db beside --store (or SVC_STORE_URL) is a usage error, exit 2, nothing done', () => {
    const r = svc(['tenant', 'create', '--id', 'twice', '--display-name', 'T', '--db', sb.db, '--store', store]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: --db and --store name two different stores; give one of them/);
    const env = svc(['keys', 'list', '--tenant', 'acme', '--db', sb.db], { env: { SVC_STORE_URL: store } });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /--store \(from SVC_STORE_URL\)/);
    assert.equal(existsSync(sb.db), false);
  });

  it('a command that works on the state directory only refuses --store clearly, exit 2', () => {
    const r = svc(['storage', 'vacuum', '--store', store]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: svc storage vacuum does not take --store: it rebuilds the SQLite files/);
    const dev = svc(['dev', sb.home], { env: { SVC_STORE_URL: store } });
    assert.equal(dev.code, 2);
    assert.match(dev.stderr, /svc dev does not take --store \(from SVC_STORE_URL\).*unset SVC_STORE_URL/);
  });

  it('the password of the URL never appears, even when the server cannot be reached', () => {
    const down = svc(['tenant', 'list', '--store', `postgres://postgres:${PASSWORD}@127.0.0.1:1/test`]);
    assert.equal(down.code, 1);
    assert.match(down.stderr, /postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test is unavailable/);
    const bad = svc(['tenant', 'list', '--store', `mysql://root:${PASSWORD}@host/db`]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: --store: the store must be a postgres:\/\/ URL/);
    for (const text of outputs) assert.ok(!text.includes(PASSWORD), `the password leaked: ${text}`);
  });
});
