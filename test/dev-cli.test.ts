/**
 * `svc dev` through the built CLI, spawned and stopped by PID: a first run marks a new state
 * directory and deploys the folder, a save (written in place, or by rename as editors do) deploys
 * under a dev-<time>-<hash> label, a broken save is reported as file:line: step: message and the
 * loop goes on, a library save redeploys; an unmarked state directory holding a registry is refused.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startCli } from './helpers/cli-child.js';
import { createTenant } from './helpers/registry-setup.js';
import { makeSandbox, svc } from './helpers/svc.js';

const LABEL = /dev-\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}/;

const helloText = (greeting: string) => `---\nflowdoc_version: "0.1"\nflow: hello\ntenant: acme\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "${greeting}"}\n\`\`\`\n`;
const usesLib = '---\nflowdoc_version: "0.1"\nflow: checked\ntenant: acme\n---\n## Step: check\nuse: common/require-id\n';
const libText = (message: string) => `## Step: require-id\n\`\`\`validate\nhas(ctx.input.id) | ${message} | syntactic\n\`\`\`\n`;

interface Shown {
  versions: { version: string; latest: boolean }[];
}

describe('svc dev', () => {
  const sandbox = makeSandbox();
  after(() => sandbox.cleanup());
  const flows = join(sandbox.home, 'flows');
  const libs = join(sandbox.home, 'libs');
  mkdirSync(flows);
  mkdirSync(libs);
  const versions = (flow: string) => (JSON.parse(svc(sandbox, ['flows', 'show', '--tenant', 'acme', '--flow', flow, '--json', '--db', sandbox.db]).stdout) as Shown).versions;
  /** Deploy lines of `flow` printed so far. */
  const deployed = (out: string, flow: string) => out.split('\n').filter((l) => l.startsWith(`deployed acme/${flow} `));

  it('deploys the folder, then every save; reports a broken save and keeps going; stops with exit 0 on SIGTERM', async () => {
    writeFileSync(join(flows, 'hello.flow.md'), helloText('one'));
    writeFileSync(join(libs, 'common.lib.md'), libText('id is required'));
    writeFileSync(join(flows, 'checked.flow.md'), usesLib);
    const dev = startCli(sandbox, ['dev', flows, '--libs', libs, '--db', sandbox.db]);
    try {
      await dev.waitForOutput('stderr', /watching .* for saves/);
      // stdout and stderr are separate pipes: wait for the first pass's lines on stdout too.
      await dev.waitForOutput('stdout', /deployed acme\/checked [^]*deployed acme\/hello /);
      assert.match(dev.stderr(), /\(new: marked with dev-state\)/);
      assert.ok(existsSync(join(dirname(sandbox.db), 'dev-state')));
      assert.match(dev.stdout(), /registered tenant acme/);
      assert.equal(deployed(dev.stdout(), 'hello').length, 1);
      assert.equal(deployed(dev.stdout(), 'checked').length, 1);

      // A save in place.
      writeFileSync(join(flows, 'hello.flow.md'), helloText('two'));
      await dev.waitForOutput('stdout', new RegExp(`(deployed acme/hello ${LABEL.source}[^\\n]*\\n[^]*){2}`));
      // A save by rename, as editors that write a temporary file do.
      writeFileSync(join(flows, '.hello.flow.md.tmp'), helloText('three'));
      renameSync(join(flows, '.hello.flow.md.tmp'), join(flows, 'hello.flow.md'));
      await dev.waitForOutput('stdout', new RegExp(`(deployed acme/hello ${LABEL.source}[^\\n]*\\n[^]*){3}`));
      const labels = versions('hello').map((v) => v.version);
      assert.equal(labels.length, 3);
      for (const l of labels) assert.match(l, new RegExp(`^${LABEL.source}$`));
      assert.deepEqual(versions('hello').map((v) => v.latest), [false, false, true]);

      // A broken save: every diagnostic as file:line: step: message, nothing deployed, still running.
      const file = join(flows, 'hello.flow.md');
      writeFileSync(file, '---\nflowdoc_version: "0.1"\nflow: hello\ntenant: acme\n---\n## Step: greet\nsoap_version: 9\n');
      await dev.waitForOutput('stderr', /hello\.flow\.md: not deployed \(\d+ errors?\); waiting for the next save/);
      assert.ok(dev.stderr().includes(`${file}:7: greet: soap_version must be 1.1 or 1.2, got 9`), dev.stderr());
      assert.equal(versions('hello').length, 3);
      assert.equal(dev.child.exitCode, null);

      // The next good save deploys again.
      writeFileSync(file, helloText('four'));
      await dev.waitForOutput('stdout', new RegExp(`(deployed acme/hello ${LABEL.source}[^\\n]*\\n[^]*){4}`));
      assert.equal(versions('hello').length, 4);

      // A library save redeploys the flow that uses it, and only that one.
      writeFileSync(join(libs, 'common.lib.md'), libText('an id, please'));
      await dev.waitForOutput('stdout', /(deployed acme\/checked [^\n]*\n[^]*){2}/);
      assert.equal(versions('checked').length, 2);
      assert.equal(versions('hello').length, 4);
    } finally {
      assert.equal(await dev.stop('SIGTERM'), 0, dev.stderr());
    }
  });

  it('refuses an unmarked state directory holding a registry; --init marks it and runs', async () => {
    const other = makeSandbox();
    try {
      createTenant(other, 'acme');
      const dir = join(other.home, 'flows');
      mkdirSync(dir);
      writeFileSync(join(dir, 'hello.flow.md'), helloText('one'));
      const refused = svc(other, ['dev', dir, '--db', other.db]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /refused: the state directory .* is not marked as a development one/);
      assert.match(refused.stderr, /--init/);
      assert.match(refused.stderr, /--force/);
      assert.equal(existsSync(join(dirname(other.db), 'dev-state')), false);
      assert.match(svc(other, ['flows', 'list', '--db', other.db]).stdout, /No flow is deployed/);

      const dev = startCli(other, ['dev', dir, '--init', '--db', other.db]);
      try {
        await dev.waitForOutput('stdout', /deployed acme\/hello /);
        assert.match(dev.stderr(), /marked now with dev-state, --init/);
        assert.ok(existsSync(join(dirname(other.db), 'dev-state')));
      } finally {
        assert.equal(await dev.stop('SIGINT'), 0, dev.stderr());
      }
    } finally {
      other.cleanup();
    }
  });
});
