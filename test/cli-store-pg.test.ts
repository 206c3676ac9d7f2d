/**
 * Black-box: the operator commands with `--store <postgres URL>` (and SVC_STORE_URL) work on the
 * PostgreSQL store as they do on a state directory (seed, config check, cert reconcile and dev
 * among them), refuse `--db` beside it, and never print the URL's password. The URL carries one
 * (trust authentication ignores it) so that a leak would show.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startCli } from './helpers/cli-child.js';
import { adminQuery, freshPgSchema, type PgSchema } from './helpers/pg.js';
import { flowFolder } from './helpers/registry-setup.js';
import { makeSandbox, svc as runSvc, type CliResult } from './helpers/svc.js';

const DEMO = resolve(dirname(fileURLToPath(import.meta.url)), '../../examples/demo');

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

const flowText = (flow: string, tenant = 'acme') =>
  `---\nflowdoc_version: "0.1"\nflow: ${flow}\ntenant: ${tenant}\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "there"}\n\`\`\`\n`;

/** `tenant/flow@version` of every published version in the schema, sorted. */
async function published(): Promise<string[]> {
  const r = await adminQuery<{ v: string }>(
    `SELECT tenant || '/' || name || '@' || version AS v FROM ${schema.name}.flow_versions ORDER BY v`,
  );
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
    assert.deepEqual(
      tenants.map((t) => [t.id, t.status]),
      [
        ['acme', 'active'],
        ['gone', 'disabled'],
        ['other', 'active'],
      ],
    );
    assert.equal(existsSync(join(sb.home, '.svc')), false, 'no state directory was created');
  });

  it('an unknown tenant is refused with exit 1, as on the state directory', () => {
    const r = svc(['tenant', 'disable', '--id', 'nobody', '--store', store]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /nobody/);
  });

  it('keys create, list and revoke', () => {
    const key = json<{ id: number; key: string; status: string }>(
      'keys',
      'create',
      '--tenant',
      'acme',
      '--label',
      'ci',
    );
    assert.match(key.key, /^svk_/);
    assert.equal(key.status, 'active');
    assert.deepEqual(
      json<{ id: number; label: string }[]>('keys', 'list', '--tenant', 'acme').map((k) => [k.id, k.label]),
      [[key.id, 'ci']],
    );
    assert.match(
      ok('keys', 'revoke', '--id', String(key.id)).stdout,
      new RegExp(`^revoked API key ${key.id} \\(tenant acme, label ci\\)`),
    );
    assert.equal(json<{ status: string }[]>('keys', 'list', '--tenant', 'acme')[0]!.status, 'revoked');
  });

  it('deploy publishes one file, then a directory of flows all at once', async () => {
    const one = join(flowFolder(sb, { 'hello.flow.md': flowText('hello') }), 'hello.flow.md');
    const r = ok('deploy', one, '-v', '1.0.0');
    assert.match(
      r.stdout,
      /^deployed\n {2}flow: {4}hello\n {2}tenant: {2}acme\n {2}version: 1\.0\.0\n {2}hash: {4}[0-9a-f]{64}\n {2}db: {6}postgres:\/\/postgres:\*\*\*@/,
    );
    const dir = flowFolder(sb, { 'a.flow.md': flowText('a'), 'b.flow.md': flowText('b', 'other') });
    const many = ok('deploy', dir, '-v', '2.0.0');
    assert.match(many.stdout, /deployed 2 flows to postgres:\/\/postgres:\*\*\*@/);
    assert.deepEqual(await published(), ['acme/a@2.0.0', 'acme/hello@1.0.0', 'other/b@2.0.0']);
  });

  it('a refused deploy names every refused file and publishes nothing', async () => {
    const dir = flowFolder(sb, {
      'c.flow.md': flowText('c'),
      'd.flow.md': flowText('d', 'gone'),
      'a.flow.md': flowText('a'),
    });
    const r = svc(['deploy', dir, '-v', '2.0.0', '--store', store, '--json']);
    assert.equal(r.code, 1);
    const body = JSON.parse(r.stdout) as { deployed: unknown[]; refused: { file: string; message: string }[] };
    assert.deepEqual(body.deployed, []);
    assert.deepEqual(
      body.refused.map((x) => x.file),
      [join(dir, 'a.flow.md'), join(dir, 'd.flow.md')],
    );
    assert.match(body.refused[0]!.message, /acme\/a.*2\.0\.0/);
    assert.equal(body.refused[1]!.message, 'tenant "gone" is disabled; enable it first: svc tenant enable --id gone');
    assert.match(r.stderr, /2 of 3 files refused; nothing was published/);
    assert.deepEqual(await published(), ['acme/a@2.0.0', 'acme/hello@1.0.0', 'other/b@2.0.0']);
  });

  it('flows list shows the latest versions from the store', () => {
    const flows = json<{ tenant: string; flow: string; version: string }[]>('flows', 'list');
    assert.deepEqual(
      flows.map((f) => `${f.tenant}/${f.flow}@${f.version}`),
      ['acme/a@2.0.0', 'acme/hello@1.0.0', 'other/b@2.0.0'],
    );
  });

  it('trace enable turns tracing on and trace list shows it', () => {
    assert.equal(
      ok('trace', 'enable', '--tenant', 'acme', '--flow', 'hello').stdout,
      'tracing of acme/hello is now on\n',
    );
    assert.deepEqual(
      json<{ tenant: string; flow: string; enabled: boolean }[]>('trace', 'list').map((f) => [
        f.tenant,
        f.flow,
        f.enabled,
      ]),
      [['acme', 'hello', true]],
    );
  });

  it('cert add and cert list', () => {
    const pem = join(sb.home, 'partner.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(sb.home, 'partner.key'),
        '-out',
        pem,
        '-days',
        '300',
        '-subj',
        '/CN=partner.example',
      ],
      { stdio: 'ignore' },
    );
    assert.match(
      ok('cert', 'add', pem, '--tenant', 'acme', '--name', 'partner').stdout,
      /^registered certificate partner of acme \(client_cert\)/,
    );
    assert.deepEqual(
      json<{ name: string; status: string }[]>('cert', 'list', '--tenant', 'acme').map((c) => [c.name, c.status]),
      [['partner', 'valid']],
    );
  });

  it('ui user add and list', () => {
    const r = svc(['ui', 'user', 'add', '--username', 'alice', '--role', 'sysadmin', '--store', store], {
      input: 'a long enough password 1\n',
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      json<{ username: string; role: string }[]>('ui', 'user', 'list').map((u) => [u.username, u.role]),
      [['alice', 'sysadmin']],
    );
  });

  it('audit --verify passes on every chain those commands wrote', () => {
    for (const tenant of ['acme', 'gone', 'other']) {
      const r = json<{ ok: boolean; count: number }>('audit', '--tenant', tenant, '--verify');
      assert.equal(r.ok, true);
      assert.ok(r.count >= 1, `${tenant} has entries`);
    }
    assert.deepEqual(
      json<{ event_type: string }[]>('audit', '--tenant', 'gone').map((e) => e.event_type),
      ['tenant.registered', 'tenant.disabled'],
    );
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
    assert.deepEqual(
      (JSON.parse(r.stdout) as { id: string }[]).map((t) => t.id),
      ['acme', 'gone', 'other'],
    );
  });

  it('--db beside --store (or SVC_STORE_URL) is a usage error, exit 2, nothing done', () => {
    // Not the sandbox's own --db, which the suite's PostgreSQL pass turns into a --store.
    const db = join(sb.home, 'elsewhere', 'registry.db');
    const r = svc(['tenant', 'create', '--id', 'twice', '--display-name', 'T', '--db', db, '--store', store]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: --db and --store name two different stores; give one of them/);
    const env = svc(['keys', 'list', '--tenant', 'acme', '--db', db], { env: { SVC_STORE_URL: store } });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /--store \(from SVC_STORE_URL\)/);
    assert.equal(existsSync(dirname(db)), false);
  });

  it('a command that works on the state directory only refuses --store clearly, exit 2', () => {
    const r = svc(['storage', 'vacuum', '--store', store]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: svc storage vacuum does not take --store: it rebuilds the SQLite files/);
    const env = svc(['storage', 'vacuum'], { env: { SVC_STORE_URL: store } });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /svc storage vacuum does not take --store \(from SVC_STORE_URL\).*unset SVC_STORE_URL/);
  });

  it('config check reads the configuration keys of the flows deployed on the store', () => {
    const text = `---\nflowdoc_version: "0.1"\nflow: priced\ntenant: acme\nconfig: [pricing_url]\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "there"}\n\`\`\`\n`;
    ok('deploy', join(flowFolder(sb, { 'priced.flow.md': text }), 'priced.flow.md'), '-v', '1.0.0');
    const missing = svc(['config', 'check', '--store', store], { env: { SVC_CONFIG_PRICING_URL: undefined } });
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /^acme\/priced\tpricing_url\tSVC_CONFIG_PRICING_URL\tMISSING$/m);
    const set = svc(['config', 'check', '--json', '--store', store], {
      env: { SVC_CONFIG_PRICING_URL: 'https://pricing.example' },
    });
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), {
      keys: [{ tenant: 'acme', flow: 'priced', key: 'pricing_url', variable: 'SVC_CONFIG_PRICING_URL', state: 'set' }],
      unreadable: [],
    });
  });

  it("cert reconcile checks the TLS paths of the store's flows against the store's certificates", async () => {
    const text = `---\nflowdoc_version: "0.1"\nflow: partner-call\ntenant: acme\neffects: [http_egress]\n---\n## Step: call\neffects: [http_egress]\nendpoint: https://127.0.0.1:1/x\ntls_client_cert: ${join(sb.home, 'partner.pem')}\ntls_client_key: ${join(sb.home, 'partner.key')}\n`;
    ok('deploy', join(flowFolder(sb, { 'partner-call.flow.md': text }), 'partner-call.flow.md'), '-v', '1.0.0');
    const inOrder = json<{ verdict: string; where?: string; certificate?: string }[]>('cert', 'reconcile');
    assert.deepEqual(
      inOrder.map((f) => [f.verdict, f.where, f.certificate]),
      [['registered and in use', "partner-call step 'call'", 'partner']],
    );
    // A flow whose certificate is not registered: exit 1, naming it.
    const stray = text
      .replace('partner-call', 'stray-call')
      .replace(join(sb.home, 'partner.pem'), join(sb.home, 'stray.pem'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(sb.home, 'stray.key'),
        '-out',
        join(sb.home, 'stray.pem'),
        '-days',
        '30',
        '-subj',
        '/CN=stray.example',
      ],
      { stdio: 'ignore' },
    );
    ok('deploy', join(flowFolder(sb, { 'stray-call.flow.md': stray }), 'stray-call.flow.md'), '-v', '1.0.0');
    const r = svc(['cert', 'reconcile', '--tenant', 'acme', '--store', store]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^NOT REGISTERED\s+acme\s+stray-call step 'call'\s+tls_client_cert/m);
  });

  it('seed sets the demo up in the store: tenant, flows at 1.0.0, key and UI users, each flow run there', () => {
    const r = ok('seed', '--demo-dir', DEMO);
    for (const f of ['hello', 'order-intake', 'fulfil-order', 'quote-soap', 'heartbeat', 'check-health'])
      assert.match(r.stdout, new RegExp(`run demo/${f}: 20[02]`));
    assert.match(r.stdout, /^ {2}svc serve --store 'postgres:\/\/postgres:\*\*\*@/m);
    const flows = json<{ tenant: string; flow: string; version: string }[]>('flows', 'list').filter(
      (f) => f.tenant === 'demo',
    );
    assert.deepEqual(
      flows.map((f) => `${f.flow}@${f.version}`),
      [
        'check-health@1.0.0',
        'fulfil-order@1.0.0',
        'heartbeat@1.0.0',
        'hello@1.0.0',
        'order-intake@1.0.0',
        'quote-soap@1.0.0',
      ],
    );
    assert.deepEqual(
      json<{ label: string; status: string }[]>('keys', 'list', '--tenant', 'demo').map((k) => [k.label, k.status]),
      [['demo', 'active']],
    );
    const users = json<{ username: string }[]>('ui', 'user', 'list').map((u) => u.username);
    for (const role of ['sysadmin', 'support', 'developer'])
      assert.ok(users.includes(`demo-${role}`), users.join(', '));
    // The runs went through the executor on the store: their events are in its log.
    const completed = ok('logs', '--tenant', 'demo', '--flow', 'hello', '--event', 'completed', '--json')
      .stdout.trim()
      .split('\n');
    assert.equal(completed.length, 1, completed.join('\n'));
    // Again: nothing is made twice.
    const again = ok('seed', '--demo-dir', DEMO, '--no-run');
    assert.match(again.stdout, /API key "demo" of demo: exists, not recreated/);
    assert.equal(json<unknown[]>('keys', 'list', '--tenant', 'demo').length, 1);
  });

  it('dev refuses a store in use until --init marks it, then deploys each save into it', async () => {
    const dir = flowFolder(sb, { 'devflow.flow.md': flowText('devflow') });
    const refused = svc(['dev', dir, '--store', store]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^refused: the store postgres:\/\/postgres:\*\*\*@[^ ]+ is not marked as a development one \(no row in its dev_state table\) and already holds a registry/,
    );
    assert.match(refused.stderr, /svc dev .* --init --store 'postgres:\/\/postgres:\*\*\*@/);
    assert.equal(
      (await adminQuery(`SELECT 1 FROM ${schema.name}.dev_state`)).rows.length,
      0,
      'a refusal marks nothing',
    );
    const dev = startCli(sb, ['dev', dir, '--init', '--store', store]);
    try {
      await dev.waitForOutput('stderr', /watching .* for saves/);
      await dev.waitForOutput('stdout', /deployed acme\/devflow dev-/);
      assert.match(
        dev.stderr(),
        /^development store postgres:\/\/postgres:\*\*\*@\S+ \(marked now with a dev_state row, --init\)$/m,
      );
      writeFileSync(join(dir, 'devflow.flow.md'), flowText('devflow').replace('there', 'again'));
      await dev.waitForOutput('stdout', /(deployed acme\/devflow dev-[^\n]*\n[^]*){2}/);
    } finally {
      assert.equal(await dev.stop('SIGTERM'), 0, dev.stderr());
      outputs.push(dev.stdout(), dev.stderr());
    }
    const versions = json<{ versions: { version: string; latest: boolean }[] }>(
      'flows',
      'show',
      '--tenant',
      'acme',
      '--flow',
      'devflow',
    ).versions;
    assert.equal(versions.length, 2);
    for (const v of versions) assert.match(v.version, /^dev-\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}$/);
    assert.equal(
      (await adminQuery(`SELECT 1 FROM ${schema.name}.dev_state`)).rows.length,
      1,
      '--init marked the store',
    );
    // Marked now: the next run goes straight in.
    const next = startCli(sb, ['dev', dir, '--store', store]);
    try {
      await next.waitForOutput('stdout', /unchanged, acme\/devflow dev-/);
      assert.match(next.stderr(), /^development store postgres:\/\/postgres:\*\*\*@\S+$/m);
    } finally {
      assert.equal(await next.stop('SIGINT'), 0, next.stderr());
      outputs.push(next.stdout(), next.stderr());
    }
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
