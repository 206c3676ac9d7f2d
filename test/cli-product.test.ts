/**
 * What a new user meets first (issue 35): `svc --version`, a mistyped command answered with its
 * suggestion and one line on --help (not the whole help), and a boot output that names every
 * database of the state directory, ui.db included (spec, Server start).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { listeningLine } from '../src/serve/service.js';
import { onlyOn, makeSandbox, startServer, svc } from './helpers/svc.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

describe('svc as a new user meets it', () => {
  it('svc --version (and -V) prints the version of svc and of its Node, exit 0', () => {
    const sb = makeSandbox();
    try {
      for (const flag of ['--version', '-V']) {
        const r = svc(sb, [flag]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.trim(), `svc ${VERSION} (Node ${process.version})`);
      }
    } finally {
      sb.cleanup();
    }
  });

  it('a mistyped command prints the suggestion and one line on --help, not the whole help', () => {
    const sb = makeSandbox();
    try {
      const r = svc(sb, ['deplyo', 'x.flow.md']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /unknown command 'deplyo'/);
      assert.match(r.stderr, /Did you mean deploy\?/);
      assert.match(r.stderr, /svc --help lists the commands/);
      assert.doesNotMatch(r.stderr, /Usage:/);
      assert.ok(r.stderr.trim().split('\n').length <= 3, r.stderr);
    } finally {
      sb.cleanup();
    }
  });

  it('the boot line names the address bound: every interface said as such, with the URL that reaches it here', () => {
    assert.equal(
      listeningLine('0.0.0.0', 'http://127.0.0.1:9090'),
      'http://0.0.0.0:9090 (every interface; on this machine http://127.0.0.1:9090)',
    );
    assert.equal(
      listeningLine('::', 'http://[::1]:9090'),
      'http://[::]:9090 (every interface; on this machine http://[::1]:9090)',
    );
    assert.equal(listeningLine('127.0.0.1', 'http://127.0.0.1:9090'), 'http://127.0.0.1:9090');
  });

  it(
    'the boot output names the registry, UI, audit and log databases and the queues',
    { skip: onlyOn('sqlite', 'the state directory') },
    async () => {
      const sb = makeSandbox();
      const server = await startServer(sb);
      try {
        const out = server.output();
        for (const [label, file] of [
          ['registry', 'registry.db'],
          ['ui db', 'ui.db'],
          ['audit', 'audit.db'],
          ['log', 'log.db'],
          ['queues', 'queues'],
        ])
          assert.match(out, new RegExp(`\\n  ${label}: +\\S*/state/${file.replace('.', '\\.')}\\n`), out);
      } finally {
        await server.stop();
        sb.cleanup();
      }
    },
  );
});
