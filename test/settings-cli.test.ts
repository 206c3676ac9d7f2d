/**
 * Black-box: `svc settings list|set|unset` (issue 35: settings without SQL), on the state directory
 * and, in the PostgreSQL pass, on the store: a bad value or name refused with the reason and nothing
 * stored, each change audited on the platform chain (`svc audit --platform`), the output saying when
 * it takes effect, and a per-request setting in force at once in a running server.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createKey, createTenant, deployFixture, inForce } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';

interface Listed {
  name: string;
  value: number;
  stored: string | null;
  default: number;
  is_default: boolean;
  read_at: string;
}

describe('svc settings', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });
  const run = (...args: string[]) => svc(sandbox, [...args, '--db', sandbox.db]);
  const listed = (): Listed[] => {
    const r = run('settings', 'list', '--json');
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Listed[];
  };
  const one = (name: string) => listed().find((s) => s.name === name)!;
  const platformEntries = () => {
    const r = run('audit', '--platform', '--json');
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { event_type: string; payload: unknown }[];
  };

  it('lists every setting with its default in force, as a table and as JSON, without creating anything', () => {
    const table = run('settings', 'list');
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NAME\s+IN_FORCE\s+STORED\s+DEFAULT\s+READ/m);
    assert.match(table.stdout, /^max_message_bytes\s+1048576\s+-\s+1048576\s+per-request/m);
    const all = listed();
    assert.ok(all.length > 10);
    assert.ok(all.every((s) => s.is_default && s.stored === null && s.value === s.default));
  });

  it('set stores a value, says it is in force now or at the next start, and audits it on the platform chain', () => {
    const now = run('settings', 'set', 'log_retention_days', '3');
    assert.equal(now.code, 0, now.stderr);
    assert.match(now.stdout, /^log_retention_days = 3, in force now \(read per cycle\); audited as setting\.changed/);
    const later = run('settings', 'set', 'max_queue_workers', '6');
    assert.equal(later.code, 0, later.stderr);
    assert.match(later.stdout, /^max_queue_workers = 6, takes effect at the next start of svc serve/);
    assert.deepEqual(
      { value: one('log_retention_days').value, stored: one('log_retention_days').stored },
      { value: 3, stored: '3' },
    );
    assert.deepEqual(
      platformEntries().map((e) => [e.event_type, e.payload]),
      [
        ['setting.changed', { name: 'log_retention_days', from: null, to: '3', actor: 'cli' }],
        ['setting.changed', { name: 'max_queue_workers', from: null, to: '6', actor: 'cli' }],
      ],
    );
    const verified = run('audit', '--platform', '--verify');
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.match(verified.stdout, /^audit chain of the platform: OK \(2 entries verified, head [0-9a-f]{64}\)$/m);
  });

  it('the same value again changes nothing and writes no entry', () => {
    const r = run('settings', 'set', 'log_retention_days', '3');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'log_retention_days was already 3; nothing changed');
    assert.equal(platformEntries().length, 2);
  });

  it('refuses a value svc would not read and an unknown name with the reason, storing and auditing nothing', () => {
    for (const [args, reason] of [
      [
        ['set', 'log_retention_days', 'soon'],
        /setting log_retention_days needs a whole number of at least 1, got "soon"/,
      ],
      [['set', 'log_retention_days', '0'], /needs a whole number of at least 1, got "0"/],
      [['set', 'log_retention_days', '2.5'], /needs a whole number/],
      [['set', 'no_such_setting', '1'], /unknown setting "no_such_setting"; known: max_message_bytes, /],
      [['set', 'constructor', '1'], /unknown setting "constructor"/],
      [['unset', '__proto__'], /unknown setting "__proto__"/],
      [['set', 'log_retention_days'], /missing required argument 'value'/],
    ] as const) {
      const r = run('settings', ...args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, reason);
    }
    assert.equal(one('log_retention_days').stored, '3');
    assert.equal(platformEntries().length, 2);
  });

  it('unset puts the default back in force and is audited; a second unset changes nothing', () => {
    const r = run('settings', 'unset', 'log_retention_days');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^log_retention_days unset \(was 3\): the default \d+, in force now/);
    assert.deepEqual(
      { stored: one('log_retention_days').stored, is_default: one('log_retention_days').is_default },
      { stored: null, is_default: true },
    );
    assert.deepEqual(platformEntries().at(-1)?.payload, {
      name: 'log_retention_days',
      from: '3',
      to: null,
      actor: 'cli',
    });
    const again = run('settings', 'unset', 'log_retention_days');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^log_retention_days was not set \(the default \d+ is in force\); nothing changed/);
    assert.equal(platformEntries().length, 3);
  });

  it('svc audit needs --tenant or --platform, and not both', () => {
    const neither = run('audit');
    assert.equal(neither.code, 1);
    assert.match(neither.stderr, /say whose chain: --tenant <t>, or --platform/);
    const both = run('audit', '--tenant', 'acme', '--platform');
    assert.notEqual(both.code, 0);
    assert.match(both.stderr, /cannot be used with/);
  });

  it('a per-request setting set by the command is in force in a running server without a restart', async () => {
    createTenant(sandbox, 'acme');
    const key = createKey(sandbox, 'acme');
    deployFixture(sandbox, 'platform-cap');
    server = await startServer(sandbox);
    const body = JSON.stringify({ pad: 'x'.repeat(300) });
    const status = async () =>
      (
        await fetch(`${server!.url}/flows/acme/platform-cap/run`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        })
      ).status;
    assert.equal(await status(), 200);
    assert.equal(run('settings', 'set', 'max_message_bytes', '200').code, 0);
    assert.equal(await inForce(status, (s) => s === 413), 413);
    assert.equal(run('settings', 'unset', 'max_message_bytes').code, 0);
    assert.equal(await inForce(status, (s) => s === 200), 200);
  });
});
