/**
 * `svc logs` through the built CLI against rows a real `svc serve` wrote: filters, JSON Lines, the
 * refusal of trace kinds (trace rows are never printed, even with tracing on), and `--follow`
 * spawned, seeing a new row, stopped by PID with SIGINT (exit 0).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startCli } from './helpers/cli-child.js';
import { waitForLogRows } from './helpers/log-reads.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, onlyOn, startServer, svc, type ServerProcess } from './helpers/svc.js';

const ECHO = '## Step: echo\n```ntd\n{"who": "{{ ctx.input.who }}"}\n```';

interface JsonRow {
  id: number;
  event: string;
  tenant: string;
  flow: string;
  correlation_id: string;
  http_status: number | null;
  payload: unknown;
}

describe('svc logs', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key = '';
  const logs = (...args: string[]) => svc(sandbox, ['logs', ...args, '--db', sandbox.db]);
  const jsonLines = (text: string) =>
    text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as JsonRow);
  const run = async (name: string, correlationId: string) => {
    const res = await fetch(`${server.url}/flows/acme/${name}/run`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-correlation-id': correlationId,
      },
      body: JSON.stringify({ who: correlationId }),
    });
    assert.equal(res.status, 200);
    await waitForLogRows(sandbox, { correlation_id: correlationId, event: 'completed' });
  };

  before(async () => {
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    deployFlow(sandbox, flow('acme', 'hello', 'log_level: full', ECHO));
    deployFlow(sandbox, flow('acme', 'other', '', ECHO));
    assert.equal(svc(sandbox, ['trace', 'enable', '--tenant', 'acme', '--flow', 'hello', '--db', sandbox.db]).code, 0);
    server = await startServer(sandbox);
    await run('hello', 'h-1');
    await run('other', 'o-1');
    await run('hello', 'h-2');
    await waitForLogRows(sandbox, { correlation_id: 'h-2', event: 'step_traced' }, 2);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('prints the rows oldest first, one line each, and never a trace row', () => {
    const r = logs();
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(
      lines.map((l) => l.split(/\s+/).slice(1, 3).join(' ')),
      [
        'received acme/hello',
        'completed acme/hello',
        'received acme/other',
        'completed acme/other',
        'received acme/hello',
        'completed acme/hello',
      ],
    );
    assert.match(
      lines[1]!,
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\s+completed\s+acme\/hello\s+status=200\s+correlation_id=h-1$/,
    );
    assert.doesNotMatch(r.stdout, /_traced|echo/);
  });

  it('filters by tenant, flow, correlation id, event and since, and --limit keeps the newest', () => {
    const ids = (r: { stdout: string }) => jsonLines(r.stdout).map((e) => `${e.event}:${e.correlation_id}`);
    assert.deepEqual(ids(logs('--flow', 'other', '--json')), ['received:o-1', 'completed:o-1']);
    assert.deepEqual(ids(logs('--correlation-id', 'h-2', '--json')), ['received:h-2', 'completed:h-2']);
    assert.deepEqual(ids(logs('--tenant', 'acme', '--event', 'completed', '--json')), [
      'completed:h-1',
      'completed:o-1',
      'completed:h-2',
    ]);
    assert.deepEqual(ids(logs('--event', 'completed', '--limit', '2', '--json')), ['completed:o-1', 'completed:h-2']);
    assert.deepEqual(ids(logs('--since', '1h', '--flow', 'other', '--json')), ['received:o-1', 'completed:o-1']);
    const future = logs('--since', '2999-01-01');
    assert.equal(future.code, 0);
    assert.equal(future.stdout, '');
    assert.match(future.stderr, /No log rows match/);
  });

  it('filters by status (a status, a class or a range) and until, as the UI page reads them', () => {
    const ids = (r: { stdout: string; stderr: string; code: number }) => {
      assert.equal(r.code, 0, r.stderr);
      return jsonLines(r.stdout).map((e) => `${e.event}:${e.correlation_id}`);
    };
    const completed = ['completed:h-1', 'completed:o-1', 'completed:h-2'];
    assert.deepEqual(ids(logs('--status', '200', '--json')), completed);
    assert.deepEqual(ids(logs('--status', '2xx', '--json')), completed);
    assert.deepEqual(ids(logs('--status', '200-299', '--flow', 'other', '--json')), ['completed:o-1']);
    assert.deepEqual(ids(logs('--status', '4xx', '--json')), []);
    assert.deepEqual(ids(logs('--until', '2000-01-01', '--json')), []);
    assert.deepEqual(ids(logs('--until', '2999-01-01', '--event', 'completed', '--json')), completed);
  });

  it('refuses the values the UI page refuses, with the same sentence naming the flag (exit 1)', () => {
    const refused: [string[], RegExp][] = [
      [
        ['--status', 'failed'],
        /--status must be an HTTP status from 100 to 599 \(404\), a class \(4xx\) or a range \(400-599\), got "failed"/,
      ],
      [['--status', '600'], /--status must be an HTTP status from 100 to 599/],
      [['--since', 'yesterday'], /--since must be a duration back from now \(30s, 10m, 2h, 7d\), a UTC day/],
      [['--until', '2026-02-30'], /--until must be a duration back from now .*got "2026-02-30"/],
      [['--flow', 'Hello'], /flow "Hello" must start with a lowercase letter or digit/],
      [['--until', '1h', '--follow'], /option '--until <when>' cannot be used with option '-f, --follow'/],
    ];
    for (const [args, message] of refused) {
      const r = logs(...args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
  });

  it('--json prints JSON Lines with the payload as the flow kept it', () => {
    const [row] = jsonLines(logs('--correlation-id', 'h-1', '--event', 'completed', '--json').stdout);
    assert.deepEqual(row!.payload, { who: 'h-1' });
    assert.equal(row!.http_status, 200);
  });

  it('refuses a trace kind, an unknown kind and an unreadable --since (exit 1)', () => {
    const traced = logs('--event', 'step_traced');
    assert.equal(traced.code, 1);
    assert.match(
      traced.stderr,
      /step_traced rows are trace rows, not part of the log search; only the support role reads them/,
    );
    assert.equal(traced.stdout, '');
    assert.match(logs('--event', 'finished').stderr, /unknown event kind "finished"/);
    assert.equal(logs('--since', 'yesterday').code, 1);
    assert.equal(logs('--limit', '10001').code, 1);
  });

  it('--follow prints new rows as they are written and exits 0 on SIGINT', async () => {
    const follower = startCli(sandbox, [
      'logs',
      '--follow',
      '--flow',
      'hello',
      '--event',
      'completed',
      '--json',
      '--limit',
      '1',
      '--db',
      sandbox.db,
    ]);
    try {
      await follower.waitForOutput('stdout', /"correlation_id":"h-2"/);
      await run('hello', 'h-3');
      await run('other', 'o-2');
      await run('hello', 'h-4');
      await follower.waitForOutput('stdout', /"correlation_id":"h-4"/);
      assert.deepEqual(
        jsonLines(follower.stdout()).map((e) => e.correlation_id),
        ['h-2', 'h-3', 'h-4'],
      );
    } finally {
      assert.equal(await follower.stop('SIGINT'), 0, follower.stderr());
    }
  });

  it(
    'reads nothing and creates nothing when the state directory does not exist',
    { skip: onlyOn('sqlite', 'a state directory that does not exist (an empty store: test/cli-store-pg.test.ts)') },
    () => {
      const empty = makeSandbox();
      try {
        const r = svc(empty, ['logs', '--db', empty.db]);
        assert.equal(r.code, 0);
        assert.match(r.stderr, /does not exist yet/);
        assert.equal(existsSync(dirname(empty.db)), false);
      } finally {
        empty.cleanup();
      }
    },
  );
});
