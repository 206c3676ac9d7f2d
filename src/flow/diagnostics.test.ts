import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileFlow } from './compile.js';
import {
  FLOW_ERROR_MESSAGES,
  FLOW_WARNING_MESSAGES,
  FlowErrorCode,
  FlowWarningCode,
  formatDiagnostic,
  formatWarning,
} from './diagnostics.js';

const HEAD = [
  '---',
  'flowdoc_version: "0.1"',
  'flow: f1',
  'tenant: acme',
  'effects: [http_egress, queue_publish, secret_read]',
];
/** A flow: extra front-matter lines (lines 6..), then the body. */
const src = (fm: string[], body: string[]): string => [...HEAD, ...fm, '---', '', ...body, ''].join('\n');
const STEP = ['## Step: s1'];

interface Case {
  what: string;
  text: string;
  code: FlowErrorCode;
  line: number;
  step: string;
  mode?: 'validate' | 'compile';
}

// Line numbers: HEAD is lines 1-5, extra front matter from 6; with no extra, "---" is 6, blank 7, body from 8.
const cases: Case[] = [
  {
    what: 'no front matter',
    text: '## Step: a\n',
    code: FlowErrorCode.FRONT_MATTER_MISSING,
    line: 1,
    step: 'front matter',
  },
  {
    what: 'empty front matter',
    text: '---\n---\nflowdoc_version: "0.1"\n---\n## Step: a\n',
    code: FlowErrorCode.FRONT_MATTER_EMPTY,
    line: 1,
    step: 'front matter',
  },
  {
    what: 'unknown front-matter key',
    text: src(['colour: red'], STEP),
    code: FlowErrorCode.UNKNOWN_FRONT_MATTER_KEY,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'unknown step key',
    text: src([], ['## Step: s1', 'method: GET', 'colour: red']),
    code: FlowErrorCode.UNKNOWN_STEP_KEY,
    line: 10,
    step: 's1',
  },
  {
    what: 'missing tenant',
    text: '---\nflowdoc_version: "0.1"\nflow: f\n---\n## Step: a\n',
    code: FlowErrorCode.MISSING_KEY,
    line: 1,
    step: 'front matter',
  },
  {
    what: 'flow name breaking the rule',
    text: src([], STEP).replace('flow: f1', 'flow: Bad_Flow'),
    code: FlowErrorCode.INVALID_NAME,
    line: 3,
    step: 'front matter',
  },
  {
    what: 'step name breaking the rule',
    text: src([], ['## Step: Bad Step']),
    code: FlowErrorCode.INVALID_NAME,
    line: 8,
    step: 'Bad Step',
  },
  {
    what: 'non-numeric queue key',
    text: src(['queue_max_attempts: many'], STEP),
    code: FlowErrorCode.QUEUE_KEY_NOT_NUMERIC,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'backoff factor below 1.0',
    text: src(['queue_backoff_factor: 0.5'], STEP),
    code: FlowErrorCode.BACKOFF_FACTOR_BELOW_ONE,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'soap_version 1.3 on a step',
    text: src([], ['## Step: s1', 'endpoint: http://x', 'soap_version: "1.3"']),
    code: FlowErrorCode.BAD_SOAP_VERSION,
    line: 10,
    step: 's1',
    mode: 'validate',
  },
  {
    what: 'soap_version on a fault step',
    text: src([], ['## Step: s1', '## Fault: oops', '## Step: f1', 'endpoint: http://x', 'soap_version: 2']),
    code: FlowErrorCode.BAD_SOAP_VERSION,
    line: 12,
    step: 'f1',
  },
  {
    what: 'content_type on a SOAP step',
    text: src([], ['## Step: s1', 'endpoint: http://x', 'soap_version: "1.1"', 'content_type: text/xml']),
    code: FlowErrorCode.CONTENT_TYPE_ON_SOAP_STEP,
    line: 11,
    step: 's1',
  },
  {
    what: 'queue_publish without queue',
    text: src([], ['## Step: s1', 'effects: [queue_publish]']),
    code: FlowErrorCode.QUEUE_PUBLISH_WITHOUT_QUEUE,
    line: 8,
    step: 's1',
  },
  {
    what: 'queue breaking the name rule',
    text: src([], ['## Step: s1', 'effects: [queue_publish]', 'queue: Bad Queue']),
    code: FlowErrorCode.INVALID_NAME,
    line: 10,
    step: 's1',
  },
  {
    what: 'an unknown effect',
    text: src([], ['## Step: s1', 'effects: [teleport]']),
    code: FlowErrorCode.UNKNOWN_EFFECT,
    line: 9,
    step: 's1',
  },
  {
    what: 'an effect not declared',
    text: src([], STEP).replace(', queue_publish, secret_read', '') + '## Step: s2\neffects: [secret_read]\n',
    code: FlowErrorCode.EFFECT_NOT_DECLARED,
    line: 10,
    step: 's2',
  },
  {
    what: 'http_egress without endpoint',
    text: src([], ['## Step: s1', 'method: GET']),
    code: FlowErrorCode.HTTP_EGRESS_WITHOUT_ENDPOINT,
    line: 8,
    step: 's1',
  },
  {
    what: 'validate expression syntax',
    text: src([], ['## Step: s1', '```validate', 'ctx.input.a > | bad | semantic', '```']),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 10,
    step: 's1',
  },
  {
    what: 'validate unknown variable',
    text: src([], ['## Step: s1', '```validate', 'input.a > 1 | bad | semantic', '```']),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 10,
    step: 's1',
    mode: 'validate',
  },
  {
    what: 'validate rule shape',
    text: src([], ['## Step: s1', '```validate', 'ctx.input.a > 1 | bad | fatal', '```']),
    code: FlowErrorCode.VALIDATE_RULE_SHAPE,
    line: 10,
    step: 's1',
  },
  {
    what: 'condition syntax',
    text: src([], ['## Step: s1', '', '```condition', 'ctx.input.a ==', '```']),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 11,
    step: 's1',
  },
  {
    what: 'template syntax in a header',
    text: src([], ['## Step: s1', 'endpoint: http://x', 'headers:', '  x-a: "{{ ctx.a + }}"']),
    code: FlowErrorCode.TEMPLATE_SYNTAX,
    line: 10,
    step: 's1',
  },
  {
    what: 'unclosed template hole',
    text: src([], ['## Step: s1', 'response_header_x_a: "{{ ctx.a"']),
    code: FlowErrorCode.TEMPLATE_SYNTAX,
    line: 9,
    step: 's1',
  },
  {
    what: 'ntd JSON that does not parse',
    text: src([], ['## Step: s1', '```ntd', '{"a": }', '```']),
    code: FlowErrorCode.NTD_SYNTAX,
    line: 10,
    step: 's1',
  },
  {
    what: 'ntd JSON nesting deeper than 128 levels',
    text: src([], ['## Step: s1', '```ntd', `${'['.repeat(10_000)}{{ ctx.input }}${']'.repeat(10_000)}`, '```']),
    code: FlowErrorCode.NTD_SYNTAX,
    line: 10,
    step: 's1',
  },
  {
    what: 'ntd hole syntax on its line',
    text: src([], ['## Step: s1', '```ntd', '{', '"a": {{ ctx. }}', '}', '```']),
    code: FlowErrorCode.NTD_SYNTAX,
    line: 11,
    step: 's1',
  },
  {
    what: 'dedup_key syntax',
    text: src(['dedup_key: ctx.input.'], STEP),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'foreach syntax',
    text: src([], ['## Step: s1', 'foreach: "{{ ctx.input.items[ }}"']),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 9,
    step: 's1',
  },
  {
    what: 'two fault sections',
    text: src([], ['## Step: s1', '## Fault: a', '## Fault: b']),
    code: FlowErrorCode.MULTIPLE_FAULT_SECTIONS,
    line: 10,
    step: 'b',
  },
  {
    what: 'duplicate step names',
    text: src([], ['## Step: s1', '## Step: s1']),
    code: FlowErrorCode.DUPLICATE_STEP,
    line: 9,
    step: 's1',
  },
  { what: 'no steps', text: src([], ['# Just prose']), code: FlowErrorCode.NO_STEPS, line: 1, step: 'front matter' },
  {
    what: 'bare ctx.X bearer token',
    text: src([], ['## Step: s1', 'endpoint: http://x', 'bearer_token: ctx.token']),
    code: FlowErrorCode.BARE_CTX_CREDENTIAL,
    line: 10,
    step: 's1',
  },
  {
    what: 'bare ctx.X oauth2 client secret',
    text: src(
      [],
      [
        '## Step: s1',
        'endpoint: http://x',
        'oauth2_token_url: "{{ ctx.u }}"',
        'oauth2_client_id: "{{ ctx.i }}"',
        'oauth2_client_secret: ctx.secret',
      ],
    ),
    code: FlowErrorCode.BARE_CTX_CREDENTIAL,
    line: 12,
    step: 's1',
  },
  {
    what: 'incomplete oauth2',
    text: src([], ['## Step: s1', 'endpoint: http://x', 'oauth2_token_url: "{{ ctx.u }}"']),
    code: FlowErrorCode.OAUTH2_INCOMPLETE,
    line: 10,
    step: 's1',
  },
  {
    what: 'split without call_flow',
    text: src([], ['## Step: s1', 'split: ctx.input.items']),
    code: FlowErrorCode.SPLIT_WITHOUT_CALL_FLOW,
    line: 9,
    step: 's1',
  },
  {
    what: 'restore_body of an unknown snapshot',
    text: src([], ['## Step: s1', 'restore_body: orig']),
    code: FlowErrorCode.UNKNOWN_SNAPSHOT,
    line: 9,
    step: 's1',
    mode: 'validate',
  },
  {
    what: 'dedup settings without a key',
    text: src(['dedup_on_failure: absorb'], STEP),
    code: FlowErrorCode.DEDUP_WITHOUT_KEY,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'a correlation_open with timeout_secs instead of deadline_secs',
    text: src(['correlation_open:', '  key: ctx.input.id', '  timeout_secs: 5'], STEP),
    code: FlowErrorCode.BAD_CORRELATION,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'a correlation_state value that is not an expression',
    text: src(['correlation_open: {key: ctx.input.id, deadline_secs: 5}', 'correlation_state:', '  amount: 3'], STEP),
    code: FlowErrorCode.BAD_CORRELATION,
    line: 7,
    step: 'front matter',
  },
  {
    what: 'correlation_state without correlation_open',
    text: src(['correlation_state: {a: ctx.input.a}'], STEP),
    code: FlowErrorCode.BAD_CORRELATION,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'correlation_state on a closing flow',
    text: src(['correlation_open: {closes: order, key: ctx.input.id}', 'correlation_state: {a: ctx.input.a}'], STEP),
    code: FlowErrorCode.BAD_CORRELATION,
    line: 7,
    step: 'front matter',
  },
  {
    what: 'a correlation key that does not parse',
    text: src(['correlation_open: {key: "ctx.input.", deadline_secs: 5}'], STEP),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 6,
    step: 'front matter',
    mode: 'validate',
  },
  {
    what: 'a correlation_state value that does not parse',
    text: src(
      ['correlation_open: {key: ctx.input.id, deadline_secs: 5}', 'correlation_state:', '  card: "ctx.input.card +"'],
      STEP,
    ),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 7,
    step: 'front matter',
    mode: 'validate',
  },
  {
    what: 'a correlation_state value naming an unknown variable',
    text: src(
      ['correlation_open: {key: ctx.input.id, deadline_secs: 5}', 'correlation_state: {card: input.card}'],
      STEP,
    ),
    code: FlowErrorCode.EXPR_SYNTAX,
    line: 7,
    step: 'front matter',
  },
  {
    what: 'an on_timeout flow name breaking the rule',
    text: src(['correlation_open: {key: ctx.input.id, deadline_secs: 5, on_timeout: Bad Flow}'], STEP),
    code: FlowErrorCode.INVALID_NAME,
    line: 6,
    step: 'front matter',
    mode: 'validate',
  },
  {
    what: 'grpc_method without inbound',
    text: src(['grpc_method: Run'], STEP),
    code: FlowErrorCode.GRPC_METHOD_WITHOUT_INBOUND,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'bad log level',
    text: src(['log_level: loud'], STEP),
    code: FlowErrorCode.INVALID_VALUE,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'a replay_volatile entry that is not a replay path',
    text: src(['replay_volatile: [body.id, "ctx.input.id"]'], STEP),
    code: FlowErrorCode.INVALID_VALUE,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'YAML that does not parse',
    text: src(['effects: [a'], STEP),
    code: FlowErrorCode.YAML_SYNTAX,
    line: 6,
    step: 'front matter',
  },
  {
    what: 'a step key block that is not a mapping',
    text: src([], ['## Step: s1', 'a: b: c']),
    code: FlowErrorCode.YAML_SYNTAX,
    line: 9,
    step: 's1',
  },
  {
    what: 'a construct fence before any step',
    text: src([], ['```condition', 'true', '```', '## Step: s1']),
    code: FlowErrorCode.FENCE_OUTSIDE_STEP,
    line: 8,
    step: 'front matter',
  },
  {
    what: 'two ntd fences in a step',
    text: src([], ['## Step: s1', '```ntd', 'a', '```', '```ntd', 'b', '```']),
    code: FlowErrorCode.DUPLICATE_FENCE,
    line: 12,
    step: 's1',
  },
  {
    what: 'an unclosed fence',
    text: src([], ['## Step: s1', '```ntd', 'a']),
    code: FlowErrorCode.UNCLOSED_FENCE,
    line: 9,
    step: 's1',
  },
  {
    what: 'a fence left open before the next step',
    text: src([], ['## Step: s1', '```validate', 'true | t | syntactic', '', '## Step: s2', '```ntd', '{}', '```']),
    code: FlowErrorCode.FENCE_NOT_CLOSED_BEFORE,
    line: 9,
    step: 's1',
  },
  {
    // An example's fences are not the construct's close (docs/testing.md): one error, at the fence.
    what: 'a fence left open before an example',
    text: src(
      [],
      [
        '## Step: s1',
        '```validate',
        'true | t | syntactic',
        '',
        '## Example: e',
        '```yaml',
        'expect: {status: 200}',
        '```',
      ],
    ),
    code: FlowErrorCode.FENCE_NOT_CLOSED_BEFORE,
    line: 9,
    step: 's1',
  },
  {
    what: 'use without a library',
    text: src([], ['## Step: s1', 'use: common/auth']),
    code: FlowErrorCode.UNKNOWN_LIBRARY,
    line: 9,
    step: 's1',
    mode: 'validate',
  },
  {
    what: 'use with a malformed reference',
    text: src([], ['## Step: s1', 'use: common']),
    code: FlowErrorCode.BAD_USE_REFERENCE,
    line: 9,
    step: 's1',
  },
];

for (const c of cases) {
  test(`refuses ${c.what} with ${c.code} on line ${c.line} of step ${c.step}`, () => {
    const r = compileFlow(c.text, { file: 'x.flow.md', mode: c.mode });
    assert.equal(r.ir, undefined);
    const d = r.diagnostics.find((x) => x.code === c.code);
    assert.ok(d, `expected ${c.code}, got ${JSON.stringify(r.diagnostics, null, 1)}`);
    assert.equal(d.line, c.line, JSON.stringify(d));
    assert.equal(d.step, c.step);
    assert.equal(d.file, 'x.flow.md');
    assert.match(formatDiagnostic(d), new RegExp(`^x\\.flow\\.md:${c.line}: `));
  });
}

/**
 * One defect, one error (issue 36): a fence left open, or a YAML slip, used to be reported as
 * every line after it (seven "a validate rule is ..." errors; six for one bracket, with a false
 * "missing key"). Each case is the whole verdict: exactly one error, where the defect is, saying the fix.
 */
const oneDefectCases: { what: string; text: string; line: number; says: RegExp }[] = [
  {
    what: "a validate fence left open before the next step (its close is the next block's)",
    text: src(
      [],
      [
        '## Step: s1',
        '```validate',
        'has(ctx.input.id) | id is required | syntactic',
        '',
        '## Step: s2',
        'response_status: 201',
        '```ntd',
        '{"ok": true}',
        '```',
      ],
    ),
    line: 9,
    says: /^the "validate" block opened here is not closed before "## Step: s2" on line 12; end it with ``` on a line of its own before that line$/,
  },
  {
    what: 'a validate fence left open before the ntd of the same step',
    text: src([], ['## Step: s1', '```validate', 'true | t | syntactic', '```ntd', '{"ok": true}', '```']),
    line: 9,
    says: /not closed before "```ntd" on line 11/,
  },
  {
    what: 'a fence left open before the fault section',
    text: src([], ['## Step: s1', '```ntd', '{"a": 1}', '## Fault: f', '```ntd', '{}', '```']),
    line: 9,
    says: /not closed before "## Fault: f" on line 11/,
  },
  {
    what: 'a fence left open to the end of the file',
    text: src([], ['## Step: s1', '```validate', 'true | t | syntactic', 'false | f | semantic']),
    line: 9,
    says: /^the "validate" block opened here is never closed; end it with ``` on a line of its own$/,
  },
  {
    what: 'a tilde fence left open',
    text: src([], ['## Step: s1', '~~~ntd', '{"a": 1}']),
    line: 9,
    says: /end it with ~~~ on a line of its own/,
  },
  {
    what: 'one bracket in the front matter (no follow-on "missing key")',
    text: '---\nflowdoc_version: "0.1"\nflow: [f1\ntenant: acme\n---\n\n## Step: s1\n',
    line: 4,
    says: /^YAML does not parse \(column \d+\): /,
  },
  {
    what: 'a doubled first "---": empty front matter (no follow-on "missing key" nor "effect not declared")',
    text: '---\n---\nflowdoc_version: "0.1"\nflow: f1\ntenant: acme\n---\n\n## Step: s1\nendpoint: http://x\n',
    line: 1,
    says: /^the front matter between the "---" lines 1 and 2 is empty; it needs at least flowdoc_version, flow and tenant$/,
  },
  {
    what: 'front matter that is not a mapping (no follow-on "missing key")',
    text: '---\njust some words\n---\n\n## Step: s1\n',
    line: 2,
    says: /the front matter/,
  },
  {
    what: "a bracket in a step's keys",
    text: src([], ['## Step: s1', 'method: [GET', 'endpoint: http://x']),
    line: 10,
    says: /^YAML does not parse/,
  },
];

for (const c of oneDefectCases) {
  test(`one defect, one error: ${c.what}`, () => {
    const r = compileFlow(c.text, { file: 'x.flow.md' });
    assert.equal(r.ir, undefined);
    const errors = r.diagnostics;
    assert.equal(errors.length, 1, JSON.stringify(errors, null, 1));
    assert.equal(errors[0]!.line, c.line, JSON.stringify(errors[0]));
    assert.match(errors[0]!.message, c.says);
  });
}

interface WarningCase {
  what: string;
  text: string;
  code: FlowWarningCode;
  line: number;
  step: string;
  /** Words the message must contain (e.g. the missing key's name). */
  says: RegExp;
}

const warningCases: WarningCase[] = [
  {
    what: 'soap_operation without soap_namespace',
    text: src(['soap_operation: Get'], STEP),
    code: FlowWarningCode.SOAP_KEYS_UNPAIRED,
    line: 6,
    step: 'front matter',
    says: /"soap_operation" without "soap_namespace" means no SOAP configuration/,
  },
  {
    what: 'soap_namespace without soap_operation',
    text: src(['log_level: full', 'soap_namespace: urn:x'], STEP),
    code: FlowWarningCode.SOAP_KEYS_UNPAIRED,
    line: 7,
    step: 'front matter',
    says: /"soap_namespace" without "soap_operation" means no SOAP configuration/,
  },
];

for (const c of warningCases) {
  for (const mode of ['validate', 'compile'] as const) {
    test(`${mode} publishes ${c.what} with the warning ${c.code} on line ${c.line} of step ${c.step}`, () => {
      const r = compileFlow(c.text, { file: 'x.flow.md', mode });
      assert.deepEqual(r.diagnostics, []);
      assert.ok(r.ir, 'the flow compiles');
      assert.equal(r.warnings.length, 1, JSON.stringify(r.warnings));
      const w = r.warnings[0]!;
      assert.equal(w.code, c.code);
      assert.equal(w.line, c.line);
      assert.equal(w.step, c.step);
      assert.match(w.message, c.says);
      assert.match(formatWarning(w), new RegExp(`^x\\.flow\\.md:${c.line}: warning: ${c.step}: `));
    });
  }
}

test('a flow with only one SOAP key has no SOAP configuration; with both it has', () => {
  assert.equal(compileFlow(src(['soap_operation: Get'], STEP)).ir!.soap, undefined);
  assert.equal(compileFlow(src(['soap_namespace: urn:x'], STEP)).ir!.soap, undefined);
  const both = compileFlow(src(['soap_operation: Get', 'soap_namespace: urn:x'], STEP));
  assert.deepEqual(both.warnings, []);
  assert.deepEqual(both.ir!.soap, { operation: 'Get', namespace: 'urn:x' });
});

test('warnings are reported beside errors and through the onWarning callback', () => {
  const seen: string[] = [];
  const r = compileFlow(src(['soap_operation: Get', 'colour: red'], STEP), { onWarning: (w) => seen.push(w.code) });
  assert.equal(r.ir, undefined);
  assert.deepEqual(
    r.diagnostics.map((d) => d.code),
    [FlowErrorCode.UNKNOWN_FRONT_MATTER_KEY],
  );
  assert.deepEqual(seen, [FlowWarningCode.SOAP_KEYS_UNPAIRED]);
  assert.deepEqual(
    r.warnings.map((w) => w.code),
    seen,
  );
});

test('every warning code has a message and a test case', () => {
  const tested = new Set(warningCases.map((c) => c.code));
  for (const code of Object.values(FlowWarningCode)) {
    assert.ok(FLOW_WARNING_MESSAGES[code].length > 0);
    assert.ok(tested.has(code), `no test case for ${code}`);
  }
});

test('every code has a message and a test case', () => {
  for (const code of Object.values(FlowErrorCode)) assert.ok(FLOW_ERROR_MESSAGES[code].length > 0);
  const tested = new Set(cases.map((c) => c.code));
  const untested = Object.values(FlowErrorCode).filter(
    (c) =>
      !tested.has(c) &&
      c !== FlowErrorCode.NOT_A_MAPPING &&
      c !== FlowErrorCode.UNKNOWN_LIBRARY_STEP &&
      c !== FlowErrorCode.NESTED_USE,
  );
  assert.deepEqual(untested, []);
});

test('one verdict lists every wrong step', () => {
  const text = src(
    [],
    [
      '## Step: a',
      'endpoint: http://x',
      'soap_version: "9"',
      '',
      '## Step: b',
      'endpoint: http://x',
      'soap_version: "1.0"',
      '## Fault: f',
      'endpoint: http://x',
      'soap_version: 3',
    ],
  );
  const r = compileFlow(text, { file: 'v.flow.md', mode: 'validate' });
  const bad = r.diagnostics.filter((d) => d.code === FlowErrorCode.BAD_SOAP_VERSION).map((d) => d.step);
  assert.deepEqual(bad, ['a', 'b', 'f']);
});

test('validate skips step-configuration checks that compile runs', () => {
  const text = src([], ['## Step: s1', 'effects: [queue_publish]']);
  assert.equal(compileFlow(text, { mode: 'validate' }).diagnostics.length, 0);
  assert.equal(compileFlow(text, { mode: 'compile' }).diagnostics[0]?.code, FlowErrorCode.QUEUE_PUBLISH_WITHOUT_QUEUE);
});

test('validate leaves correlation shape to compile and deploy, which refuse it with every problem', () => {
  const text = src(['correlation_open:', '  key: ctx.input.id', 'correlation_state:', '  timeout_secs: 3600'], STEP);
  assert.equal(compileFlow(text, { mode: 'validate' }).diagnostics.length, 0);
  const r = compileFlow(text, { file: 'c.flow.md', mode: 'compile' });
  assert.equal(r.ir, undefined);
  assert.deepEqual(
    r.diagnostics.map((d) => [d.code, d.line]),
    [
      [FlowErrorCode.BAD_CORRELATION, 6],
      [FlowErrorCode.BAD_CORRELATION, 8],
    ],
  );
  assert.match(r.diagnostics[0]!.message, /deadline_secs must be a whole number/);
  assert.match(r.diagnostics[1]!.message, /correlation_state\.timeout_secs must be an expression/);
});

test('a well-formed opening and closing correlation compile', () => {
  const open = src(
    [
      'correlation_open: {key: ctx.input.id, deadline_secs: 60, on_timeout: order-timeout, step: s1}',
      'correlation_state: {card: ctx.input.card}',
    ],
    STEP,
  );
  assert.deepEqual(compileFlow(open).diagnostics, []);
  assert.deepEqual(compileFlow(src(['correlation_open: {closes: order, key: ctx.input.id}'], STEP)).diagnostics, []);
});

test('an unknown key suggests the closest known one', () => {
  const r = compileFlow(src([], ['## Step: s1', 'endpont: http://x']));
  assert.match(r.diagnostics[0]!.message, /did you mean "endpoint"/);
});

test('the onError callback sees every diagnostic', () => {
  const seen: string[] = [];
  const r = compileFlow(src(['colour: red', 'queue_backoff_factor: 0'], STEP), { onError: (d) => seen.push(d.code) });
  assert.deepEqual(
    seen,
    r.diagnostics.map((d) => d.code),
  );
  assert.equal(seen.length, 2);
});
