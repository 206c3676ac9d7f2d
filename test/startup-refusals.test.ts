/** Start-up refusals of the real `svc serve`: unset config, bare credential spelling, unreadable artifacts. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  corruptArtifact,
  createTenant,
  deployFlow,
  flow,
  insertArtifact,
  withRegistry,
} from './helpers/registry-setup.js';
import { makeSandbox, startServer, storeArgs, svc, SVC_BIN, type Sandbox } from './helpers/svc.js';

const PRICING = flow(
  'acme',
  'pricing',
  'config: [pricing_url]',
  '## Step: answer\n```ntd\n{"url": "{{ ctx.pricing_url }}"}\n```',
);
const HELLO = flow('acme', 'hello', '', '## Step: answer\n```ntd\n{"hello": "{{ ctx.input.name }}"}\n```');
const CALLER = flow(
  'acme',
  'caller',
  'effects: [http_egress]',
  '## Step: call\nendpoint: http://127.0.0.1:9/x\nbearer_token: "{{ ctx.token }}"',
);

/** `svc serve` expected to refuse: runs to exit (bounded) and returns its code and stderr. */
function serveRefusal(
  sandbox: Sandbox,
  env: NodeJS.ProcessEnv,
): { code: number | null; stderr: string; stdout: string } {
  const r = spawnSync(
    process.execPath,
    [SVC_BIN, ...storeArgs(['serve', '--host', '127.0.0.1', '--port', '0', '--db', sandbox.db])],
    {
      cwd: sandbox.home,
      env: { ...sandbox.env, ...env },
      encoding: 'utf8',
      timeout: 20_000,
    },
  );
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('svc serve start-up refusals', () => {
  const sandbox = makeSandbox();
  before(() => {
    createTenant(sandbox, 'acme');
    deployFlow(sandbox, PRICING);
    deployFlow(sandbox, HELLO);
  });
  after(() => sandbox.cleanup());

  it('refuses to start when a declared config key has no variable, naming tenant, flow, key and variable', () => {
    const r = serveRefusal(sandbox, { SVC_CONFIG_PRICING_URL: undefined });
    assert.notEqual(r.code, 0);
    assert.equal(r.code !== null, true, 'the server must exit, not keep running');
    assert.match(
      r.stderr,
      /refusing to start: flow 'acme\/pricing' declares config key 'pricing_url' but SVC_CONFIG_PRICING_URL is not set/,
    );
    assert.doesNotMatch(r.stdout, /listening on/);
  });

  it('starts when the config variable is set but empty, and the flow reads it as ctx.<key>', async () => {
    const server = await startServer(sandbox, ['--no-auth'], { SVC_CONFIG_PRICING_URL: '' });
    try {
      const res = await fetch(`${server.url}/flows/acme/pricing/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { url: '' }, 'the config key reaches the flow as ctx.<key>');
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  it('reports an unreadable artifact at ERROR on stderr and still boots, serving the other flows', async () => {
    corruptArtifact(sandbox, 'acme', 'pricing');
    const server = await startServer(sandbox, ['--no-auth'], { SVC_CONFIG_PRICING_URL: undefined, RUST_LOG: 'info' });
    try {
      const ok = await fetch(`${server.url}/flows/acme/hello/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":"ada"}',
      });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { hello: 'ada' });
      const broken = await fetch(`${server.url}/flows/acme/pricing/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(broken.status, 500);
      assert.deepEqual(await broken.json(), { ok: false, error: 'internal error' });
    } finally {
      await server.stop();
    }
    const line = server
      .stderr()
      .split('\n')
      .find((l) => l.includes('unreadable flow artifact'));
    assert.ok(line, `no unreadable-artifact line on stderr:\n${server.stderr()}`);
    assert.equal(JSON.parse(line).level, 50, 'logged at ERROR');
    assert.match(line, /acme\/pricing/);
  });

  it('refuses to start on an artifact whose credential key uses the bare ctx.X spelling', () => {
    const file = join(sandbox.home, 'caller.flow.md');
    writeFileSync(file, CALLER);
    const compiled = svc(sandbox, ['compile', file]);
    assert.equal(compiled.code, 0, compiled.stderr);
    const ir = JSON.parse(compiled.stdout) as { steps: { http?: { bearerToken?: string } }[] };
    assert.equal(ir.steps[0]!.http!.bearerToken, '{{ ctx.token }}');
    ir.steps[0]!.http!.bearerToken = 'ctx.token';
    insertArtifact(sandbox, 'acme', 'caller', '1.0.0', ir);
    const r = serveRefusal(sandbox, { SVC_CONFIG_PRICING_URL: 'x' });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /flow acme\/caller step 'call': bearer_token uses the bare spelling 'ctx\.token'/);
  });

  it('refuses to start when the registry cannot be read at all', () => {
    const other = makeSandbox();
    try {
      if (other.store === undefined) {
        mkdirSync(join(other.home, 'state'), { recursive: true });
        writeFileSync(other.db, 'not an SQLite database '.repeat(200));
      } else {
        // The store's schema is migrated (its version recorded), but a registry table is gone.
        withRegistry(other, (db) => db.exec('ALTER TABLE tenants RENAME TO tenants_away'));
      }
      const r = serveRefusal(other, {});
      assert.notEqual(r.code, 0);
      assert.notEqual(r.code, null, 'the server must exit, not keep running');
      assert.doesNotMatch(r.stdout, /listening on/);
      assert.match(r.stderr, /registry|database/i);
      // On the store: which store, and what could not be read.
      if (other.store !== undefined)
        assert.match(
          r.stderr,
          /the registry could not be read from the PostgreSQL store postgres:\/\/\S+schema=svcbb_\w+: relation "tenants" does not exist/,
        );
    } finally {
      other.cleanup();
    }
  });

  it('the compiler refuses the bare ctx.X spelling at deploy', () => {
    const file = join(sandbox.home, 'bare.flow.md');
    writeFileSync(file, CALLER.replace('flow: caller', 'flow: bare').replace('"{{ ctx.token }}"', 'ctx.token'));
    const r = svc(sandbox, ['deploy', file, '-v', '1.0.0', '--db', sandbox.db]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr + r.stdout, /bearer_token/);
  });
});
