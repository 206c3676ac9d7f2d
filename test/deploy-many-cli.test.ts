/** `svc deploy` with several files or a directory: one process, all or nothing, every refused file named. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { makeSandbox, svc } from './helpers/svc.js';
import { createTenant, flowFolder } from './helpers/registry-setup.js';
import { storeRows } from './helpers/store-sql.js';

const sb = makeSandbox();
test.after(() => sb.cleanup());
createTenant(sb, 'acme');

const flowText = (flow: string, greeting = 'hi') =>
  `---\nflowdoc_version: "0.1"\nflow: ${flow}\ntenant: acme\n---\n## Step: greet\n\`\`\`ntd\n{"hi": "${greeting}"}\n\`\`\`\n`;

/** Every `flow@version` of tenant acme in the registry, sorted. */
function versions(): string[] {
  return storeRows<{ v: string }>(
    sb,
    'registry',
    "SELECT name || '@' || version AS v FROM flow_versions WHERE tenant = 'acme' ORDER BY v",
  ).map((r) => r.v);
}

/** The payloads of tenant acme's `flow.deployed` audit entries, oldest first. */
function deployedEntries(): { flow: string; version: string; actor: string }[] {
  return storeRows<{ payload: string }>(
    sb,
    'audit',
    "SELECT payload FROM audit_entries WHERE tenant = 'acme' AND event_type = 'flow.deployed' ORDER BY seq",
  ).map((r) => JSON.parse(r.payload) as { flow: string; version: string; actor: string });
}

/** Where a deploy says it published, after `prefix`: a path ending in registry.db, or in the PostgreSQL pass the store URL itself. */
function assertStoreShown(text: string, prefix = ''): void {
  if (sb.store === undefined) assert.match(text, new RegExp(`^${prefix}\\S+registry\\.db$`));
  else assert.equal(text, `${prefix}${sb.store}`);
}

test('a directory of three flows is deployed in one process: a line per flow, then the count', () => {
  const dir = flowFolder(sb, {
    'one.flow.md': flowText('one'),
    'two.flow.md': flowText('two'),
    'three.flow.md': flowText('three'),
    'README.md': 'not a flow',
  });
  const r = svc(sb, ['deploy', dir, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^TENANT +FLOW +VERSION +HASH +FILE$/);
  assert.deepEqual(
    lines.slice(1, 4).map((l) => l.split(/ +/).slice(0, 3).join(' ')),
    ['acme one 1.0.0', 'acme three 1.0.0', 'acme two 1.0.0'],
  );
  assert.ok(lines[1]!.endsWith(join(dir, 'one.flow.md')), lines[1]);
  assertStoreShown(lines[4]!, 'deployed 3 flows to ');
  assert.equal(lines.length, 5);
  assert.deepEqual(versions(), ['one@1.0.0', 'three@1.0.0', 'two@1.0.0']);
  // Each flow published is on the tenant's audit chain, in the order deployed.
  assert.deepEqual(
    deployedEntries().map((e) => `${e.flow}@${e.version} by ${e.actor}`),
    ['one@1.0.0 by cli', 'three@1.0.0 by cli', 'two@1.0.0 by cli'],
  );
  assert.equal(svc(sb, ['audit', '--tenant', 'acme', '--verify', '--db', sb.db]).code, 0);
});

test('a directory with one broken flow publishes nothing and names the file with its errors', () => {
  const dir = flowFolder(sb, {
    'good.flow.md': flowText('good'),
    'bad.flow.md': flowText('bad').replace('---\n## Step', 'queue_backoff_factor: 0.5\n---\n## Step'),
  });
  const r = svc(sb, ['deploy', dir, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 1);
  const bad = join(dir, 'bad.flow.md');
  assert.equal(
    r.stderr,
    `${bad}: 1 error\n${bad}:5: front matter: "queue_backoff_factor" must be at least 1.0, got 0.5\n1 of 2 files refused; nothing was published\n`,
  );
  assert.equal(r.stdout, '');
  assert.ok(!versions().some((v) => v.startsWith('good@')), versions().join());
  assert.ok(!deployedEntries().some((e) => e.flow === 'good'), 'a refused deploy is not audited');
});

test('a version already published for one flow of the deploy publishes nothing', () => {
  const dir = flowFolder(sb, { 'one.flow.md': flowText('one', 'again'), 'four.flow.md': flowText('four') });
  const before = versions();
  const r = svc(sb, ['deploy', dir, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    new RegExp(
      `^${join(dir, 'one.flow.md')}: flow acme/one already has version "1\\.0\\.0"; versions are never replaced`,
      'm',
    ),
  );
  assert.ok(!r.stderr.includes('four.flow.md'), r.stderr);
  assert.match(r.stderr, /1 of 2 files refused; nothing was published\n$/);
  assert.deepEqual(versions(), before);
});

test('two files naming the same flow are both refused; with --json the refusals are on stdout', () => {
  const a = flowFolder(sb, { 'x.flow.md': flowText('same') });
  const b = flowFolder(sb, { 'y.flow.md': flowText('same', 'other') });
  const r = svc(sb, ['deploy', join(a, 'x.flow.md'), join(b, 'y.flow.md'), '-v', '1.0.0', '--json', '--db', sb.db]);
  assert.equal(r.code, 1);
  const body = JSON.parse(r.stdout) as {
    deployed: unknown[];
    refused: { file: string; code: string; message: string }[];
  };
  assert.deepEqual(body.deployed, []);
  assert.deepEqual(
    body.refused.map((x) => [x.file, x.code]),
    [
      [join(a, 'x.flow.md'), 'SVC_ERR_CONFLICT'],
      [join(b, 'y.flow.md'), 'SVC_ERR_CONFLICT'],
    ],
  );
  assert.match(body.refused[0]!.message, /flow acme\/same is also in .*y\.flow\.md/);
  assert.match(r.stderr, /x\.flow\.md: flow acme\/same is also in/);
  assert.ok(!versions().some((v) => v.startsWith('same@')));
});

test('--json lists what was deployed with full hashes', () => {
  const dir = flowFolder(sb, { 'five.flow.md': flowText('five'), 'six.flow.md': flowText('six') });
  const r = svc(sb, ['deploy', dir, '-v', '2', '--json', '--db', sb.db]);
  assert.equal(r.code, 0, r.stderr);
  const body = JSON.parse(r.stdout) as {
    db: string;
    deployed: { file: string; tenant: string; flow: string; version: string; hash: string }[];
  };
  assertStoreShown(body.db);
  assert.deepEqual(
    body.deployed.map((d) => [d.flow, d.version, d.hash.length]),
    [
      ['five', '2', 64],
      ['six', '2', 64],
    ],
  );
});

test('one file keeps the one-file form: the same block on success, the same refusal', () => {
  const file = join(flowFolder(sb, { 'seven.flow.md': flowText('seven') }), 'seven.flow.md');
  const hash = svc(sb, ['compile', file, '-o', join(sb.home, 'seven.ir.json')]).stdout.trim();
  const r = svc(sb, ['deploy', file, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `deployed\n  flow:    seven\n  tenant:  acme\n  version: 1.0.0\n  hash:    ${hash}\n  db:      ${sb.store ?? sb.db}\n`,
  );
  const again = svc(sb, ['deploy', file, '-v', '1.0.0', '--db', sb.db]);
  assert.equal(again.code, 1);
  assert.equal(
    again.stderr,
    'error: flow acme/seven already has version "1.0.0"; versions are never replaced, deploy under a new version\n',
  );
});
