import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sha256Hex } from '../common/digest.js';
import { compileFlow, type LibrarySource } from './compile.js';

const FLOW = `---
flowdoc_version: "0.1"
flow: orders
tenant: acme
effects: [http_egress, secret_read]
dedup_key: "{{ ctx.input.id }}"
---

# Orders

Prose is ignored, and so are \`json\` fences:

\`\`\`json
{"example": true}
\`\`\`

## Step: token
effects: [secret_read]

## Step: price
use: common/post-json
read_timeout_ms: 500
headers:
  X-Id: "{{ ctx.input.id }}"
set_ctx:
  attempts: 1
  label: "n={{ ctx.input.id }}"
\`\`\`condition
has(ctx.input.id) || ctx.input.force
\`\`\`
`;

const LIBS: LibrarySource[] = [
  {
    name: 'common',
    file: 'libs/common.lib.md',
    text: '# Common steps\n\n## Step: post-json\nendpoint: ${API}/x\nmethod: put\nread_timeout_ms: 2000\n```ntd\n{"id": {{ ctx.input.id }}}\n```\n',
  },
];

test('the same source always gives the same bytes and hash', () => {
  const a = compileFlow(FLOW, { libs: LIBS });
  const b = compileFlow(FLOW, { libs: LIBS });
  assert.deepEqual(a.diagnostics, []);
  assert.equal(a.bytes, b.bytes);
  assert.equal(a.hash, sha256Hex(a.bytes!));
  assert.match(a.hash!, /^[0-9a-f]{64}$/);
});

test('use expands a library step; keys beside use override it', () => {
  const { ir } = compileFlow(FLOW, { libs: LIBS });
  const price = ir!.steps[1]!;
  assert.equal(price.use, 'common/post-json');
  assert.equal(price.http?.method, 'PUT');
  assert.equal(price.http?.readTimeoutMs, 500);
  assert.equal(price.http?.endpoint, '${API}/x');
  assert.deepEqual(price.http?.headers, { 'x-id': '{{ ctx.input.id }}' });
  assert.equal(price.ntd?.format, 'json');
  assert.equal(price.condition, 'has(ctx.input.id) || ctx.input.force');
  assert.deepEqual(price.setCtx, { attempts: '{{ 1 }}', label: 'n={{ ctx.input.id }}' });
});

test('secret_read defaults its key to the step name and whole-hole expressions are stored bare', () => {
  const { ir } = compileFlow(FLOW, { libs: LIBS });
  assert.equal(ir!.steps[0]!.secretKey, 'token');
  assert.equal(ir!.dedup?.key, 'ctx.input.id');
  assert.equal(ir!.dedup?.onFailure, 'rerun');
});

test('an error inside an expanded library step names the library file and line', () => {
  const libs = [{ ...LIBS[0]!, text: LIBS[0]!.text.replace('method: put', 'method: put\nsoap_version: "7"') }];
  const r = compileFlow(FLOW, { libs, file: 'orders.flow.md' });
  const d = r.diagnostics.find((x) => x.code === 'BAD_SOAP_VERSION');
  assert.equal(d?.file, 'libs/common.lib.md');
  assert.equal(d?.line, 6);
  assert.equal(d?.step, 'price');
});

test('composition constructs compile', () => {
  const src = `---
flowdoc_version: "0.1"
flow: fan
tenant: acme
---
## Step: each
foreach: ctx.input.items
## Step: many
split: "{{ ctx.input.items }}"
call_flow: one-item
## Step: both
fork: [a, b]
`;
  const { ir, diagnostics } = compileFlow(src);
  assert.deepEqual(diagnostics, []);
  assert.equal(ir!.steps[0]!.foreach, 'ctx.input.items');
  assert.equal(ir!.steps[1]!.split, 'ctx.input.items');
  assert.equal(ir!.steps[1]!.callFlow, 'one-item');
  assert.deepEqual(ir!.steps[2]!.fork, ['a', 'b']);
});

test('compiling is deterministic for any input (property)', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (s) => {
      const a = compileFlow(FLOW.replace('Prose is ignored', s), { libs: LIBS });
      const b = compileFlow(FLOW.replace('Prose is ignored', s), { libs: LIBS });
      assert.equal(a.bytes, b.bytes);
      assert.deepEqual(a.diagnostics, b.diagnostics);
    }),
    { numRuns: 200 },
  );
});

const pieces = [
  '---\n',
  'flowdoc_version: "0.1"\n',
  'flow: f\n',
  'tenant: t\n',
  'effects: [http_egress]\n',
  '## Step: a\n',
  '## Fault: x\n',
  '```validate\n',
  '```ntd\n',
  '```condition\n',
  '```\n',
  'endpoint: "{{ ctx.x }}"\n',
  'soap_version: 1.3\n',
  'ctx.a > 1 | m | semantic\n',
  '{"a": {{ ctx.b }}}\n',
  '<x>{{ ctx.c }}</x>\n',
  'use: l/s\n',
  'key: [\n',
  '\n',
  ': :\n',
  '{{\n',
  '}}\n',
  'queue_backoff_factor: x\n',
];

test('no input makes the parser throw: every problem is a diagnostic (property)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ maxLength: 20 })), { maxLength: 30 }),
      (parts) => {
        const r = compileFlow(parts.join(''), { libs: LIBS });
        assert.ok(r.ir !== undefined || r.diagnostics.length > 0);
      },
    ),
    { numRuns: 300 },
  );
});

test('replay_volatile is kept in the IR only when declared: the IR and hash of a flow without it do not change', () => {
  const text = (extra: string) =>
    `---\nflowdoc_version: "0.1"\nflow: quote\ntenant: acme\n${extra}---\n\n## Step: answer\n\`\`\`ntd\n{"id": 1}\n\`\`\`\n`;
  const plain = compileFlow(text(''));
  assert.ok(plain.ir, JSON.stringify(plain.diagnostics));
  assert.equal('replayVolatile' in plain.ir, false);
  const declared = compileFlow(text('replay_volatile: [body.id, "body.items[*].at", status, headers.x-request-id]\n'));
  assert.ok(declared.ir, JSON.stringify(declared.diagnostics));
  assert.deepEqual(declared.ir.replayVolatile, ['body.id', 'body.items[*].at', 'status', 'headers.x-request-id']);
  assert.notEqual(declared.hash, plain.hash);
});
