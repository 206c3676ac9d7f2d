import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { greeterSet, greeterSetMissingImport, GREETER_SERVICE_PROTO_V2 } from './helpers/grpc.js';
import { createTenant, setTenantEnabled } from './helpers/registry-setup.js';
import { makeSandbox, svc } from './helpers/svc.js';

describe('svc proto deploy, list, show', () => {
  const sandbox = makeSandbox();
  const set1 = join(sandbox.home, 'greeter-v1.pb');
  const set2 = join(sandbox.home, 'greeter-v2.pb');
  const noImports = join(sandbox.home, 'greeter-no-imports.pb');
  const garbage = join(sandbox.home, 'garbage.pb');
  const deploy = (...args: string[]) => svc(sandbox, ['proto', 'deploy', ...args, '--db', sandbox.db]);
  const list = (...args: string[]) => svc(sandbox, ['proto', 'list', ...args, '--db', sandbox.db]);
  const show = (...args: string[]) => svc(sandbox, ['proto', 'show', ...args, '--db', sandbox.db]);

  before(() => {
    writeFileSync(set1, greeterSet());
    writeFileSync(set2, greeterSet(GREETER_SERVICE_PROTO_V2));
    writeFileSync(noImports, greeterSetMissingImport());
    writeFileSync(garbage, 'this is not a descriptor set');
  });
  after(() => sandbox.cleanup());

  it('an unregistered tenant is refused naming `svc tenant create`, and no state file is created', () => {
    const r = deploy(set1, '--tenant', 'acme', '--name', 'greeter', '--version', '1.0.0');
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /tenant "acme" is not registered; register it with `svc tenant create --id acme --display-name <name>`/,
    );
    assert.equal(existsSync(sandbox.db), false);
  });

  it('a disabled tenant is refused naming `svc tenant enable`', () => {
    createTenant(sandbox, 'acme');
    createTenant(sandbox, 'sleepy');
    setTenantEnabled(sandbox, 'sleepy', false);
    const r = deploy(set1, '--tenant', 'sleepy', '--name', 'greeter', '--version', '1.0.0');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /tenant "sleepy" is disabled; enable it with `svc tenant enable --id sleepy`/);
  });

  it('a tenant or name breaking the name rule is refused before anything is read', () => {
    const r = deploy(set1, '--tenant', 'Acme', '--name', 'greeter', '--version', '1.0.0');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /tenant "Acme" must start with a lowercase letter or digit/);
    assert.match(
      deploy(set1, '--tenant', 'acme', '--name', 'my greeter', '--version', '1').stderr,
      /descriptor name "my greeter"/,
    );
  });

  it('a set built without --include_imports is refused naming the missing import and the fix, and nothing is stored', () => {
    const r = deploy(noImports, '--tenant', 'acme', '--name', 'greeter', '--version', '1.0.0');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /"demo_v1\.proto" imports "demo_common\.proto"/);
    assert.match(r.stderr, /--include_imports/);
    assert.match(list('--tenant', 'acme').stdout, /No descriptors for tenant acme\./);
  });

  it('a file that is not a FileDescriptorSet is refused', () => {
    const r = deploy(garbage, '--tenant', 'acme', '--name', 'greeter', '--version', '1.0.0');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not a binary FileDescriptorSet/);
  });

  it('a missing file is refused naming it', () => {
    const r = deploy(join(sandbox.home, 'nope.pb'), '--tenant', 'acme', '--name', 'greeter', '--version', '1.0.0');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot read descriptor set .*nope\.pb/);
  });

  it('deploy without --latest publishes and says latest is unchanged', () => {
    const r = deploy(set1, '--tenant', 'acme', '--name', 'greeter', '--version', '1.0.0');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /descriptor: acme\/greeter/);
    assert.match(r.stdout, /version: +1\.0\.0/);
    assert.match(r.stdout, /hash: +[0-9a-f]{64}/);
    assert.match(r.stdout, /service: +demo\.v1\.Greeter \(4 methods\)/);
    assert.match(r.stdout, /latest: +unchanged \(no version is latest yet\); pass --latest to move it/);
  });

  it('deploy with --latest moves latest', () => {
    const r = deploy(set1, '--tenant', 'acme', '--name', 'greeter', '--version', '1.1.0', '--latest');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /latest: +1\.1\.0 \(moved/);
    const again = deploy(set2, '--tenant', 'acme', '--name', 'greeter', '--version', '2.0.0');
    assert.match(again.stdout, /latest: +unchanged \(1\.1\.0\); pass --latest to move it/);
  });

  it('publishing a version twice is an error and changes nothing', () => {
    const before = list('--tenant', 'acme', '--json').stdout;
    const r = deploy(set2, '--tenant', 'acme', '--name', 'greeter', '--version', '1.1.0', '--latest');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /version 1\.1\.0 is already published; publish under a new version/);
    assert.equal(list('--tenant', 'acme', '--json').stdout, before);
  });

  it('list shows name, version, hash, latest and deployed time', () => {
    const r = list('--tenant', 'acme');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /^NAME +VERSION +HASH +LATEST +DEPLOYED$/);
    assert.equal(lines.length, 4);
    assert.match(r.stdout, /greeter +1\.1\.0 +[0-9a-f]{64} +yes +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
    const rows = JSON.parse(list('--tenant', 'acme', '--json').stdout) as Array<{
      version: string;
      latest: boolean;
      size_bytes: number;
    }>;
    assert.deepEqual(
      rows.map((x) => [x.version, x.latest]),
      [
        ['1.0.0', false],
        ['1.1.0', true],
        ['2.0.0', false],
      ],
    );
    assert.equal(rows[0]!.size_bytes, greeterSet().length);
  });

  it('show lists services and methods with their streaming kind, latest by default', () => {
    const r = show('--tenant', 'acme', '--name', 'greeter');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /descriptor acme\/greeter version 1\.1\.0 \(latest\)/);
    assert.match(r.stdout, /service demo\.v1\.Greeter/);
    assert.match(r.stdout, /demo\.v1\.Greeter\/SayHello +unary +callable/);
    assert.match(r.stdout, /demo\.v1\.Greeter\/SayMany +server-streaming +callable/);
    assert.match(r.stdout, /demo\.v1\.Greeter\/Upload +client-streaming +not callable/);
    assert.match(r.stdout, /demo\.v1\.Greeter\/Chat +bidi-streaming +not callable/);
    assert.match(r.stdout, /Only unary and server-streaming methods can be called/);
  });

  it('show --version shows an older version; an unknown one is an error', () => {
    assert.match(show('--tenant', 'acme', '--name', 'greeter', '--version', '1.0.0').stdout, /version 1\.0\.0\n/);
    const r = show('--tenant', 'acme', '--name', 'greeter', '--version', '9.9.9');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /descriptor acme\/greeter version 9\.9\.9 not found; see `svc proto list --tenant acme`/);
  });

  it('another tenant sees none of these descriptors', () => {
    assert.match(list('--tenant', 'other').stdout, /No descriptors for tenant other\./);
    assert.equal(show('--tenant', 'other', '--name', 'greeter').code, 1);
  });
});
