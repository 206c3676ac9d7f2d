/**
 * `svc test` through the built CLI (issue 37): every example of examples/ passes; a table of
 * examples, a passing and a failing one of each expectation kind, gets the verdict its name says;
 * a call out without a stub fails naming the step and the URL; no socket is ever opened (the
 * endpoints point at a live loopback server that counts connections: it stays at zero); the
 * coverage lists what no example reached; the JUnit XML parses back; exit codes 0, 1 and 2;
 * `svc deploy --test` publishes nothing when an example fails; a changed flow fails its examples.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { XMLParser } from 'fast-xml-parser';
import { createTenant } from './helpers/registry-setup.js';
import { makeSandbox, svc } from './helpers/svc.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = join(ROOT, 'examples');

/** A flow with a rule, a call out, a publication and a shaped answer; no fault section, so failures surface. */
const shopFlow = (port: number, answerStatus = 201) => `---
flowdoc_version: "0.1"
flow: order
tenant: shop
effects: [http_egress, queue_publish]
queue_max_attempts: 4
queue_initial_delay_ms: 1000
queue_backoff_factor: 2.0
---

## Step: check
\`\`\`validate
has(ctx.input.id) | id is required | syntactic
\`\`\`

## Step: price
effects: [http_egress]
endpoint: http://127.0.0.1:${port}/price/{{ ctx.input.id }}
method: GET

## Step: publish
effects: [queue_publish]
queue: ship
\`\`\`ntd
{"price": {{ ctx.input.amount }}}
\`\`\`

## Step: answer
response_status: ${answerStatus}
response_header_x_price: "{{ ctx.input.price }}"
\`\`\`ntd
{"price": {{ ctx.input.price }}, "at": "{{ now() }}", "id": "{{ uuid() }}"}
\`\`\`
`;

/** One example: `pass: ...` must pass and `fail: ...` must fail (the table below). */
const example = (name: string, yaml: string) => `\n## Example: ${name}\n\n\`\`\`yaml\n${yaml.trim()}\n\`\`\`\n`;

const PRICED = `stubs:\n  price: {status: 200, body: {amount: 12.5}}`;

const TABLE: [string, string][] = [
  [
    'pass: everything at once',
    `input: {id: A1}
now: 2026-05-01T12:00:00Z
${PRICED}
expect:
  outcome: completed
  status: 201
  headers: {x-price: "12.5"}
  body: {price: 12.5, at: "2026-05-01T12:00:00.000Z", id: 00000000-0000-4000-8000-000000000001}
  published: {ship: [{price: 12.5}]}
  calls: {price: [{method: GET, url: "http://127.0.0.1:PORT/price/A1"}]}
  steps: [check, price, publish, answer]`,
  ],
  ['fail: status', `input: {id: A1}\n${PRICED}\nexpect:\n  status: 200`],
  ['fail: header', `input: {id: A1}\n${PRICED}\nexpect:\n  headers: {x-price: "13"}`],
  ['fail: body', `input: {id: A1}\n${PRICED}\nexpect:\n  body: {price: 12.5}`],
  ['pass: body path', `input: {id: A1}\n${PRICED}\nexpect:\n  body_paths: {$.price: 12.5}`],
  ['fail: body path', `input: {id: A1}\n${PRICED}\nexpect:\n  body_paths: {$.price: 99}`],
  ['fail: published', `input: {id: A1}\n${PRICED}\nexpect:\n  published: {ship: [{price: 1}]}`],
  ['fail: published elsewhere', `input: {id: A1}\n${PRICED}\nexpect:\n  published: {}`],
  ['pass: published count', `input: {id: A1}\n${PRICED}\nexpect:\n  published: {ship: 1}`],
  ['fail: calls', `input: {id: A1}\n${PRICED}\nexpect:\n  calls: {price: [{url: "http://elsewhere/"}]}`],
  ['fail: steps', `input: {id: A1}\n${PRICED}\nexpect:\n  steps: [check, answer]`],
  ['pass: refused by a rule', `input: {}\nexpect:\n  outcome: refused\n  status: 400\n  rule: id is required`],
  ['fail: refused by another rule', `input: {}\nexpect:\n  rule: amount is required`],
  [
    'pass: a refused connection fails the call out',
    `input: {id: A1}\nstubs: {price: refused}\nexpect:\n  outcome: failed\n  status: 502\n  fault_step: price\n  error: ECONNREFUSED`,
  ],
  ['fail: another cause', `input: {id: A1}\nstubs: {price: refused}\nexpect:\n  outcome: failed\n  error: ETIMEDOUT`],
  [
    'fail: the wrong failing step',
    `input: {id: A1}\nstubs: {price: refused}\nexpect:\n  outcome: failed\n  fault_step: publish`,
  ],
  ['fail: an unexpected failure', `input: {id: A1}\nstubs: {price: timeout}\nexpect:\n  body_paths: {$.error: x}`],
  [
    "pass: a queued message dead-lettered after the flow's 4 attempts",
    `door: enqueue\ninput: {id: A1}\nstubs: {price: timeout}\nexpect:\n  outcome: dead_lettered\n  attempts: 4\n  fault_step: price`,
  ],
  ['fail: dead-lettered after 3', `door: enqueue\ninput: {id: A1}\nstubs: {price: timeout}\nexpect:\n  attempts: 3`],
  [
    'pass: the third delivery succeeds',
    `door: enqueue\ninput: {id: A1}\nstubs:\n  price: [timeout, {status: 503}, {status: 200, body: {amount: 3}}]\nexpect:\n  outcome: completed\n  attempts: 3\n  published: {ship: [{price: 3}]}`,
  ],
  ['fail: a call out without a stub', `input: {id: A1}\nexpect:\n  status: 201`],
  ['fail: a stub for no step', `input: {id: A1}\n${PRICED}\n  prcie: refused\nexpect:\n  status: 201`],
  ['fail: a mistyped key', `input: {id: A1}\n${PRICED}\nexpect:\n  stauts: 201`],
  ['pass: skipped', `skip: not today\nexpect:\n  status: 200`],
];

describe('svc test', () => {
  const sb = makeSandbox();
  const dir = join(sb.home, 'flows');
  mkdirSync(dir);
  let server: Server;
  let connections = 0;
  let port = 0;
  let flowFile = '';

  before(async () => {
    // A live backend on the endpoints' port: any connection an example made would be counted.
    server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
    flowFile = join(dir, 'order.flow.md');
    writeFileSync(
      flowFile,
      shopFlow(port) + TABLE.map(([name, yaml]) => example(name, yaml.replace('PORT', String(port)))).join(''),
    );
  });
  after(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    sb.cleanup();
  });

  it('every example of examples/ passes (the demo and feature flows, their suites and callees)', () => {
    const r = svc(sb, ['test', EXAMPLES, '--libs', join(EXAMPLES, 'libs')]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^\d+ passed, 0 failed$/m);
    assert.doesNotMatch(r.stdout, /^FAIL/m);
    // Every flow file carries at least one example.
    const cov = svc(sb, ['test', EXAMPLES, '--libs', join(EXAMPLES, 'libs'), '--coverage']);
    const noExamples = cov.stdout.split('\n').filter((l) => / 0 example\(s\)/.test(l));
    assert.deepEqual(noExamples, []);
  });

  it('gives each example of the table the verdict its name says, with the differences by path', () => {
    const r = svc(sb, ['test', flowFile, '--json']);
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const results = lines.filter((l) => typeof l.example === 'string');
    assert.equal(results.length, TABLE.length);
    for (const [name] of TABLE) {
      const got = results.find((x) => x.example === name);
      assert.ok(got, name);
      const want = name === 'pass: skipped' ? 'skipped' : name.startsWith('pass') ? 'passed' : 'failed';
      assert.equal(got.verdict, want, `${name}: ${JSON.stringify(got)}`);
    }
    const totals = lines.at(-1)!;
    const fails = TABLE.filter(([n]) => n.startsWith('fail')).length;
    assert.deepEqual(totals, { passed: TABLE.length - fails - 1, failed: fails, skipped: 1, compile_errors: 0 });
    assert.equal(connections, 0, 'no example may open a socket');
  });

  it('prints a failure as a person reads it: where, expected against actual by path, and how the run went', () => {
    const r = svc(sb, ['test', flowFile, '--filter', 'fail: body']);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^FAIL {2}shop\/order {2}fail: body {2}\(/m);
    assert.ok(r.stdout.includes(`at ${flowFile}:`), r.stdout);
    assert.match(r.stdout, /body\.at: expected nothing, got "2026-01-01T00:00:00\.000Z"/);
    assert.match(r.stdout, /steps run: check -> price -> publish -> answer \(completed\)/);
    assert.match(r.stdout, /^0 passed, 2 failed$/m);

    const missing = svc(sb, ['test', flowFile, '--filter', 'without a stub']);
    assert.ok(
      missing.stdout.includes(
        `step 'price' called GET http://127.0.0.1:${port}/price/A1, and the example has no stub for it`,
      ),
      missing.stdout,
    );
    const typo = svc(sb, ['test', flowFile, '--filter', 'mistyped']);
    assert.match(typo.stdout, /order\.flow\.md:\d+: expect\.stauts: unknown key; known here: status,/);
    const failed = svc(sb, ['test', flowFile, '--filter', 'the wrong failing step']);
    assert.match(failed.stdout, /fault_step: expected "publish", got "price"/);
    assert.match(failed.stdout, /\(failed at step 'price': step 'price': request failed: ECONNREFUSED/);
    assert.equal(connections, 0);
  });

  it('lists what no example reached with --coverage', () => {
    const r = svc(sb, ['test', flowFile, '--filter', 'pass: everything', '--coverage']);
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /shop\/order {2}4\/5 reached, 1 example\(s\)/);
    assert.match(r.stdout, /- step 'check': the rule on line 13 never refused \("id is required"\)/);
    const all = svc(sb, ['test', flowFile, '--coverage']);
    assert.match(all.stdout, /shop\/order {2}5\/5 reached/);
  });

  it('writes JUnit XML that parses back: a testsuite per flow, a testcase per example, failures and skips', () => {
    const xml = join(sb.home, 'junit.xml');
    const r = svc(sb, ['test', flowFile, '--junit', xml]);
    assert.equal(r.code, 1);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(
      readFileSync(xml, 'utf8'),
    ) as {
      testsuites: {
        tests: string;
        failures: string;
        skipped: string;
        testsuite: { name: string; testcase: Record<string, unknown>[] };
      };
    };
    const fails = TABLE.filter(([n]) => n.startsWith('fail')).length;
    assert.equal(Number(doc.testsuites.tests), TABLE.length);
    assert.equal(Number(doc.testsuites.failures), fails);
    assert.equal(Number(doc.testsuites.skipped), 1);
    assert.equal(doc.testsuites.testsuite.name, 'shop/order');
    const cases = doc.testsuites.testsuite.testcase;
    assert.deepEqual(
      cases.map((c) => c.name),
      TABLE.map(([n]) => n),
    );
    const status = cases.find((c) => c.name === 'fail: status')!;
    assert.match(String((status.failure as Record<string, unknown>).message), /status: expected 200, got 201/);
    assert.ok(cases.find((c) => c.name === 'pass: skipped')!.skipped !== undefined);
  });

  it('exits 0 when all pass, 1 when none is found, 2 when a file does not compile (file:line: step: message)', () => {
    assert.equal(svc(sb, ['test', flowFile, '--filter', 'pass: ']).code, 0);
    const none = svc(sb, ['test', flowFile, '--filter', 'no such example']);
    assert.equal(none.code, 1);
    assert.match(none.stdout, /no example found/);
    const broken = join(sb.home, 'broken');
    mkdirSync(broken);
    writeFileSync(
      join(broken, 'bad.flow.md'),
      '---\nflowdoc_version: "0.1"\nflow: bad\ntenant: shop\n---\n## Step: a\nsoap_version: 9\n',
    );
    const r = svc(sb, ['test', broken]);
    assert.equal(r.code, 2);
    assert.ok(r.stderr.includes(`${join(broken, 'bad.flow.md')}:7: a: soap_version must be 1.1 or 1.2`), r.stderr);
  });

  it('fails the examples of a flow that changed (the answer status 201 became 200)', () => {
    const changed = join(sb.home, 'changed');
    mkdirSync(changed);
    const text = readFileSync(flowFile, 'utf8').replace('response_status: 201', 'response_status: 200');
    writeFileSync(join(changed, 'order.flow.md'), text);
    const r = svc(sb, ['test', changed, '--filter', 'pass: everything']);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /status: expected 201, got 200/);
  });

  it('goes on with then: a repeated key is answered from the first delivery, a correlation times out on the virtual clock', () => {
    const dir3 = join(sb.home, 'state');
    mkdirSync(dir3);
    const text = `---
flowdoc_version: "0.1"
flow: hold
tenant: shop
dedup_key: ctx.input.id
dedup_memoize_response: true
correlation_open:
  key: ctx.input.id
  deadline_secs: 3600
  on_timeout: expire
correlation_state:
  id: ctx.input.id
---

## Step: answer
\`\`\`ntd
{"held": "{{ ctx.input.id }}", "at": "{{ now() }}"}
\`\`\`
${example(
  'pass: replayed, then timed out',
  `input: {id: H1}
now: 2026-05-01T12:00:00Z
expect:
  body: {held: H1, at: "2026-05-01T12:00:00.000Z"}
then:
  - after: 30m
    input: {id: H1}
    expect:
      headers: {x-svc-idempotent-replay: "true", x-svc-first-correlation-id: example}
      body: {held: H1, at: "2026-05-01T12:00:00.000Z"}
      published: {}
  - after: 31m
    expect:
      published: {expire: [{id: H1}]}`,
)}${example(
      'fail: timed out too early',
      `input: {id: H2}
expect:
  status: 200
then:
  - after: 59m
    expect:
      published: {expire: [{id: H2}]}`,
    )}`;
    writeFileSync(join(dir3, 'hold.flow.md'), text);
    const r = svc(sb, ['test', dir3]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /^PASS {2}shop\/hold {2}pass: replayed, then timed out/m);
    assert.match(r.stdout, /^FAIL {2}shop\/hold {2}fail: timed out too early/m);
    assert.match(r.stdout, /then\[0\]\.published\.expire\[0\]: expected \{"id":"H2"\}, got nothing/);
  });

  it('reads secrets and config from the example or --env, never from the process environment', () => {
    const dir2 = join(sb.home, 'secrets');
    mkdirSync(dir2);
    const text = `---
flowdoc_version: "0.1"
flow: signed
tenant: shop
effects: [secret_read]
config: [region]
---

## Step: api_token
effects: [secret_read]

## Step: answer
\`\`\`ntd
{"region": "{{ ctx.region }}", "token_length": {{ size(ctx.api_token) }}}
\`\`\`
${example('pass: from the example', 'config: {region: eu}\nsecrets: {api_token: abc}\nexpect:\n  body: {region: eu, token_length: 3}')}${example('pass: from --env', 'expect:\n  body: {region: us, token_length: 5}')}`;
    writeFileSync(join(dir2, 'signed.flow.md'), text);
    const env = join(sb.home, 'test.env');
    writeFileSync(env, '# for svc test\nSVC_CONFIG_REGION=us\nexport SVC_SECRET_API_TOKEN="12345"\n');
    const leaked = { SVC_CONFIG_REGION: 'leaked', SVC_SECRET_API_TOKEN: 'leaked-token' };
    // Without --env the second example has no secret, whatever the environment of svc test holds.
    const alone = svc(sb, ['test', dir2], { env: leaked });
    assert.equal(alone.code, 1, alone.stdout);
    assert.match(alone.stdout, /^PASS {2}shop\/signed {2}pass: from the example/m);
    assert.match(alone.stdout, /environment variable SVC_SECRET_API_TOKEN is not set/);
    assert.doesNotMatch(alone.stdout, /leaked/);
    const withEnv = svc(sb, ['test', dir2, '--env', env], { env: leaked });
    assert.equal(withEnv.code, 0, withEnv.stdout);
  });

  it('deploy --test publishes nothing when an example fails, and deploys when every one passes', () => {
    createTenant(sb, 'shop');
    const refused = svc(sb, ['deploy', '--test', '-v', '1.0.0', flowFile, '--db', sb.db]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refused: \d+ example\(s\) failed; nothing was published/);
    assert.match(svc(sb, ['flows', 'list', '--db', sb.db]).stdout, /No flow is deployed/);

    const good = join(sb.home, 'good');
    mkdirSync(good);
    const passing = TABLE.filter(([n]) => n.startsWith('pass'));
    writeFileSync(
      join(good, 'order.flow.md'),
      shopFlow(port) + passing.map(([name, yaml]) => example(name, yaml.replace('PORT', String(port)))).join(''),
    );
    const ok = svc(sb, ['deploy', '--test', '-v', '1.0.0', good, '--db', sb.db]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /deployed 1 flow/);
    assert.equal(connections, 0);
  });
});
