/** Black-box: `svc seed` on an empty state directory, again on a seeded one, with --no-run, and with a missing directory. */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';

const DEMO = resolve(dirname(fileURLToPath(import.meta.url)), '../../examples/demo');

describe('svc seed', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });
  const seed = (...args: string[]) => svc(sandbox, ['seed', '--demo-dir', DEMO, '--db', sandbox.db, ...args]);
  let key = '';
  let password = '';

  it('refuses a missing directory and one without flows, creating nothing', () => {
    const missing = svc(sandbox, ['seed', '--demo-dir', join(sandbox.home, 'nope'), '--db', sandbox.db]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /demo directory .*nope does not exist/);
    const empty = svc(sandbox, ['seed', '--demo-dir', sandbox.home, '--db', sandbox.db]);
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /holds no \*\.flow\.md file; nothing was changed/);
    assert.equal(existsSync(sandbox.db), false, 'no state directory was made');
  });

  it('on an empty state directory: registers, deploys at 1.0.0, makes a key and a user per role, runs each flow, prints the secrets once', () => {
    const r = seed();
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /tenant demo: registered/);
    for (const f of ['hello', 'order-intake', 'fulfil-order', 'quote-soap', 'heartbeat', 'check-health']) {
      assert.match(r.stdout, new RegExp(`flow demo/${f} 1\\.0\\.0: deployed`));
      assert.match(r.stdout, new RegExp(`run demo/${f}: 20[02]`));
    }
    key = /API key of demo: (svk_[0-9a-f]{32})/.exec(r.stdout)?.[1] ?? '';
    assert.ok(key, r.stdout);
    password = /UI user demo-support \(support\): password (\S+)/.exec(r.stdout)?.[1] ?? '';
    assert.ok(password);
    for (const role of ['sysadmin', 'support', 'developer'])
      assert.match(r.stdout, new RegExp(`UI user demo-${role} \\(${role}\\): created`));
    assert.match(r.stdout, new RegExp(`svc simulate --api-key demo=${key}`));
  });

  it('a second run creates nothing twice and prints no secret', () => {
    const r = seed('--no-run');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /already deployed, identical, left alone/);
    assert.match(r.stdout, /API key "demo" of demo: exists, not recreated/);
    assert.match(r.stdout, /UI user demo-sysadmin: exists, not recreated/);
    assert.doesNotMatch(r.stdout, /svk_[0-9a-f]{32}|password /);
    assert.doesNotMatch(r.stdout, /^run /m, '--no-run runs nothing');
    const keys = JSON.parse(
      svc(sandbox, ['keys', 'list', '--tenant', 'demo', '--json', '--db', sandbox.db]).stdout,
    ) as unknown[];
    assert.equal(keys.length, 1);
  });

  it('a demo flow that fails on its sample makes the exit status non-zero, naming it', () => {
    const dir = join(sandbox.home, 'failing-demo');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'strict.flow.md'),
      '---\nflowdoc_version: "0.1"\nflow: strict\ntenant: other\n---\n## Step: check\n```validate\nctx.input.n > 5 | n must be above 5 | semantic\n```\n',
    );
    writeFileSync(join(dir, 'strict.sample.json'), '{"n": 1}');
    const r = svc(sandbox, ['seed', '--demo-dir', dir, '--db', sandbox.db]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /run other\/strict: FAILED 422/);
    assert.match(r.stderr, /1 demo flow\(s\) failed: other\/strict/);
  });

  it('what seed made works on a running server: the flows at 1.0.0 with the printed key, and a demo UI user logs in', async () => {
    server = await startServer(sandbox);
    const meta = await fetch(`${server.url}/flows/demo/hello`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(meta.status, 200);
    assert.equal(((await meta.json()) as { version: string }).version, '1.0.0');
    const run = await fetch(`${server.url}/flows/demo/hello/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"name": "Ada"}',
    });
    assert.equal(run.status, 200);
    await uiLogin(server.url, 'demo-support', password);
  });
});

describe('svc seed without --demo-dir', () => {
  const sandbox = makeSandbox();
  after(() => sandbox.cleanup());

  it('reads ./examples/demo of the working directory when it exists, and says so', () => {
    const dir = join(sandbox.home, 'project', 'examples', 'demo');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'mine.flow.md'),
      '---\nflowdoc_version: "0.1"\nflow: mine\ntenant: own\n---\n## Step: answer\n```ntd\n{"ok": true}\n```\n',
    );
    writeFileSync(join(dir, 'mine.sample.json'), '{}');
    const r = svc(sandbox, ['seed', '--db', sandbox.db], { cwd: join(sandbox.home, 'project') });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^reading the demo flows in ${dir} \\(\\./examples/demo\\)$`, 'm'));
    assert.match(r.stdout, /flow own\/mine 1\.0\.0: deployed/);
    assert.doesNotMatch(r.stdout, /flow demo\//, "only the working directory's set");
  });

  it('reads the demo set installed with svc when the working directory has none, and says so', () => {
    const r = svc(sandbox, ['seed', '--db', sandbox.db, '--no-run']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^reading the demo flows in ${DEMO} \\(installed with svc\\)$`, 'm'));
    assert.match(r.stdout, /flow demo\/hello 1\.0\.0: deployed/);
  });
});
