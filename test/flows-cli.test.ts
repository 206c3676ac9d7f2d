/** `svc flows list` and `svc flows show` through the built CLI: markers, versions, front matter, doors, --json, refusals. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTenant, deployFlow, flow, withRegistry } from './helpers/registry-setup.js';
import { makeSandbox, svc } from './helpers/svc.js';

const BODY = '## Step: greet\n```ntd\n{"hi": "{{ ctx.input.name }}"}\n```';

describe('svc flows', () => {
  const sandbox = makeSandbox();
  const run = (...args: string[]) => svc(sandbox, ['flows', ...args, '--db', sandbox.db]);

  before(() => {
    createTenant(sandbox, 'acme');
    createTenant(sandbox, 'beta');
    deployFlow(sandbox, flow('acme', 'hello', '', BODY), { version: '1.0.0' });
    deployFlow(sandbox, flow('acme', 'hello', 'schedule: "0 0 6 * * *"\nrequired_scope: greet', BODY), {
      version: '1.1.0',
    });
    deployFlow(sandbox, flow('acme', 'quote', 'soap_operation: GetQuote\nsoap_namespace: urn:example:quotes', BODY), {
      version: '1',
    });
    deployFlow(sandbox, flow('beta', 'greeter', 'inbound: grpc\ngrpc_method: demo.Greeter/Greet', BODY), {
      version: '7',
    });
  });
  after(() => sandbox.cleanup());

  it('list prints every latest version with its SOAP, gRPC and schedule markers', () => {
    const r = run('list');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /^TENANT\s+FLOW\s+LATEST\s+HASH\s+CREATED_AT\s+SOAP\s+GRPC\s+SCHEDULE$/);
    assert.match(
      lines[1]!,
      /^acme\s+hello\s+1\.1\.0\s+[0-9a-f]{12}\s+\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\s+-\s+-\s+0 0 6 \* \* \*$/,
    );
    assert.match(lines[2]!, /^acme\s+quote\s+1\s+[0-9a-f]{12}\s+\S+\s+soap\s+-\s+-$/);
    assert.match(lines[3]!, /^beta\s+greeter\s+7\s+[0-9a-f]{12}\s+\S+\s+-\s+grpc\s+-$/);
    assert.equal(lines.length, 4);
  });

  it('list --json gives full hashes and the markers; --tenant narrows it', () => {
    const rows = JSON.parse(run('list', '--json').stdout) as {
      tenant: string;
      flow: string;
      version: string;
      hash: string;
      soap: boolean;
      grpc: boolean;
      schedule: string | null;
    }[];
    assert.deepEqual(
      rows.map((f) => [f.tenant, f.flow, f.version, f.soap, f.grpc, f.schedule]),
      [
        ['acme', 'hello', '1.1.0', false, false, '0 0 6 * * *'],
        ['acme', 'quote', '1', true, false, null],
        ['beta', 'greeter', '7', false, true, null],
      ],
    );
    assert.ok(rows.every((f) => /^[0-9a-f]{64}$/.test(f.hash)));
    assert.deepEqual(
      (JSON.parse(run('list', '--tenant', 'beta', '--json').stdout) as { flow: string }[]).map((f) => f.flow),
      ['greeter'],
    );
    assert.match(run('list', '--tenant', 'gamma').stdout, /No flow is deployed for tenant gamma/);
  });

  it("show prints every version, then the latest one's front matter and doors", () => {
    const r = run('show', '--tenant', 'acme', '--flow', 'hello');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /flow acme\/hello: 2 versions, oldest first/);
    assert.match(r.stdout, /\n1\.0\.0\s+[0-9a-f]{64}\s+\S+\n1\.1\.0\s+[0-9a-f]{64}\s+\S+\s+latest\n/);
    assert.match(r.stdout, /version 1\.1\.0 \(latest\)/);
    assert.match(r.stdout, /\n {2}required_scope: greet\n/);
    assert.match(r.stdout, /\n {2}queue_max_attempts: 3\n/);
    assert.match(r.stdout, /\n {2}http\s+POST \/flows\/acme\/hello\/run/);
    assert.match(r.stdout, /\n {2}queue\s+POST \/flows\/acme\/hello\/enqueue/);
    assert.match(r.stdout, /\n {2}cron\s+"0 0 6 \* \* \*" UTC/);
  });

  it('show --version describes an older version, and --json carries versions, front matter and doors', () => {
    const old = run('show', '--tenant', 'acme', '--flow', 'hello', '--version', '1.0.0');
    assert.match(old.stdout, /version 1\.0\.0 \(not latest: only the latest version answers\)/);
    assert.doesNotMatch(old.stdout, /cron/);
    const shown = JSON.parse(run('show', '--tenant', 'acme', '--flow', 'quote', '--json').stdout) as {
      versions: { version: string; latest: boolean }[];
      shown: { version: string; front_matter: Record<string, unknown>; doors: { door: string; detail: string }[] };
    };
    assert.deepEqual(
      shown.versions.map((v) => [v.version, v.latest]),
      [['1', true]],
    );
    assert.equal(shown.shown.front_matter.soap_operation, 'GetQuote');
    assert.deepEqual(
      shown.shown.doors.map((d) => d.door),
      ['http', 'queue', 'soap'],
    );
    const grpc = JSON.parse(run('show', '--tenant', 'beta', '--flow', 'greeter', '--json').stdout) as typeof shown;
    assert.ok(grpc.shown.doors.some((d) => d.door === 'grpc' && d.detail.startsWith('demo.Greeter/Greet')));
  });

  it('show refuses an unknown flow or version (exit 1) and a flag breaking the name rule', () => {
    const none = run('show', '--tenant', 'acme', '--flow', 'nope');
    assert.equal(none.code, 1);
    assert.match(none.stderr, /flow 'acme\/nope' is not deployed/);
    const version = run('show', '--tenant', 'acme', '--flow', 'hello', '--version', '9');
    assert.equal(version.code, 1);
    assert.match(version.stderr, /has no version "9"; its versions: 1\.0\.0, 1\.1\.0/);
    assert.equal(run('show', '--tenant', 'Acme', '--flow', 'hello').code, 1);
    assert.equal(run('show', '--flow', 'hello').code, 1);
  });

  it('list marks an unreadable artifact and exits 1 naming it', () => {
    withRegistry(sandbox, (db) =>
      db
        .prepare("UPDATE artifacts SET bytes = ? WHERE hash = (SELECT hash FROM flow_versions WHERE name = 'quote')")
        .run(Buffer.from('{}')),
    );
    const r = run('list');
    assert.equal(r.code, 1);
    assert.match(r.stdout, /acme\s+quote\s+1\s+\S+\s+\S+\s+\?\s+\?\s+UNREADABLE/);
    assert.match(r.stderr, /acme\/quote version 1: artifact unreadable: artifact [0-9a-f]{64} is corrupt/);
    assert.match(r.stdout, /acme\s+hello\s+1\.1\.0/);
  });

  it('a read of a state directory that does not exist creates nothing', () => {
    const empty = makeSandbox();
    try {
      const r = svc(empty, ['flows', 'list', '--db', empty.db]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /No flow is deployed/);
      assert.equal(existsSync(dirname(empty.db)), false);
    } finally {
      empty.cleanup();
    }
  });
});
