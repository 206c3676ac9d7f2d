/**
 * `svc dev` through the built CLI, spawned and stopped by PID: a first run marks a new state
 * directory (a new store, in the PostgreSQL pass) and deploys the folder, a save (written in place,
 * or by rename as editors do) deploys under a dev-<time>-<hash> label, a broken save is reported as
 * file:line: step: message and the loop goes on, a library save redeploys; an unmarked one holding
 * a registry is refused; a `svc serve` on the same state answers with each save.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startCli } from './helpers/cli-child.js';
import { createTenant } from './helpers/registry-setup.js';
import { storeRows } from './helpers/store-sql.js';
import { makeSandbox, ON_PG_STORE, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const LABEL = /dev-\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}/;

const helloText = (greeting: string) =>
  `---\nflowdoc_version: "0.1"\nflow: hello\ntenant: acme\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "${greeting}"}\n\`\`\`\n`;
const usesLib =
  '---\nflowdoc_version: "0.1"\nflow: checked\ntenant: acme\n---\n## Step: check\nuse: common/require-id\n';
const libText = (message: string) =>
  `## Step: require-id\n\`\`\`validate\nhas(ctx.input.id) | ${message} | syntactic\n\`\`\`\n`;

interface Shown {
  versions: { version: string; latest: boolean }[];
}

/** How the guard names what marks the state: the state directory's file, or the store's row. */
const MARKER = ON_PG_STORE ? 'a dev_state row' : 'dev-state';
const GUARDED = ON_PG_STORE ? 'store' : 'state directory';

/** Whether the sandbox's state is marked as a development one, looked at behind svc's back. */
function devMarked(sandbox: Sandbox): boolean {
  if (sandbox.store !== undefined) return storeRows(sandbox, 'registry', 'SELECT 1 FROM dev_state').length === 1;
  return existsSync(join(dirname(sandbox.db), 'dev-state'));
}

describe('svc dev', () => {
  const sandbox = makeSandbox();
  after(() => sandbox.cleanup());
  const flows = join(sandbox.home, 'flows');
  const libs = join(sandbox.home, 'libs');
  mkdirSync(flows);
  mkdirSync(libs);
  const versions = (flow: string) =>
    (
      JSON.parse(
        svc(sandbox, ['flows', 'show', '--tenant', 'acme', '--flow', flow, '--json', '--db', sandbox.db]).stdout,
      ) as Shown
    ).versions;
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
      assert.ok(dev.stderr().includes(`(new: marked with ${MARKER})`), dev.stderr());
      assert.ok(devMarked(sandbox));
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
      assert.deepEqual(
        versions('hello').map((v) => v.latest),
        [false, false, true],
      );

      // A broken save: every diagnostic as file:line: step: message, nothing deployed, still running.
      const file = join(flows, 'hello.flow.md');
      writeFileSync(
        file,
        '---\nflowdoc_version: "0.1"\nflow: hello\ntenant: acme\n---\n## Step: greet\nsoap_version: 9\n',
      );
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
      assert.match(refused.stderr, new RegExp(`refused: the ${GUARDED} .* is not marked as a development one`));
      assert.match(refused.stderr, /--init/);
      assert.match(refused.stderr, /--force/);
      assert.equal(devMarked(other), false);
      assert.match(svc(other, ['flows', 'list', '--db', other.db]).stdout, /No flow is deployed/);

      const dev = startCli(other, ['dev', dir, '--init', '--db', other.db]);
      try {
        await dev.waitForOutput('stdout', /deployed acme\/hello /);
        assert.ok(dev.stderr().includes(`marked now with ${MARKER}, --init`), dev.stderr());
        assert.ok(devMarked(other));
      } finally {
        assert.equal(await dev.stop('SIGINT'), 0, dev.stderr());
      }
    } finally {
      other.cleanup();
    }
  });

  it('a svc serve on the same state directory or store answers with each saved version at once', async () => {
    const other = makeSandbox();
    let server: ServerProcess | undefined;
    const dir = join(other.home, 'flows');
    mkdirSync(dir);
    writeFileSync(join(dir, 'hello.flow.md'), helloText('one'));
    const dev = startCli(other, ['dev', dir, '--db', other.db]);
    try {
      await dev.waitForOutput('stdout', /deployed acme\/hello /);
      const s = (server = await startServer(other, ['--no-auth']));
      const hi = async () =>
        (
          (await (
            await fetch(`${s.url}/flows/acme/hello/run`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: '{}',
            })
          ).json()) as { hi?: string }
        ).hi;
      assert.equal(await hi(), 'one');
      writeFileSync(join(dir, 'hello.flow.md'), helloText('two'));
      await dev.waitForOutput('stdout', /(deployed acme\/hello [^\n]*\n[^]*){2}/);
      // SQLite: the next request sees the commit; a store: the change log's notification, in milliseconds.
      await waitFor('the saved version to answer', async () => (await hi()) === 'two', 2000);
    } finally {
      await server?.stop();
      assert.equal(await dev.stop('SIGTERM'), 0, dev.stderr());
      other.cleanup();
    }
  });
  it("runs the folder's examples after each save that deploys, and after a suite's save: failures and one result line", async () => {
    const other = makeSandbox();
    const dir = join(other.home, 'flows');
    mkdirSync(dir);
    const withExample = (greeting: string) =>
      `${helloText(greeting)}\n## Example: greets\n\n\`\`\`yaml\nexpect:\n  body: {hi: one}\n\`\`\`\n`;
    writeFileSync(join(dir, 'hello.flow.md'), withExample('one'));
    const dev = startCli(other, ['dev', dir, '--db', other.db]);
    try {
      await dev.waitForOutput('stdout', /examples: 1 passed, 0 failed/);
      // A save that changes the answer: deployed (a flow may change), and its example says what broke.
      writeFileSync(join(dir, 'hello.flow.md'), withExample('two'));
      await dev.waitForOutput(
        'stdout',
        /FAIL {2}acme\/hello {2}greets[^]*body\.hi: expected "one", got "two"[^]*examples: 0 passed, 1 failed/,
      );
      // A suite beside it is run on its own save, with nothing deployed for it.
      const deploys = dev
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('deployed acme/hello ')).length;
      writeFileSync(join(dir, 'hello.test.md'), '## Example: greets two\n\n```yaml\nexpect:\n  body: {hi: two}\n```\n');
      await dev.waitForOutput('stdout', /examples: 1 passed, 1 failed/);
      assert.equal(
        dev
          .stdout()
          .split('\n')
          .filter((l) => l.startsWith('deployed acme/hello ')).length,
        deploys,
      );
    } finally {
      assert.equal(await dev.stop('SIGTERM'), 0, dev.stderr());
      other.cleanup();
    }
  });
});
