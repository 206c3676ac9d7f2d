import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseExamples } from './example-file.js';

const section = (name: string, body: string) => `## Example: ${name}\n\n${body}\n`;
const yaml = (text: string) => `\`\`\`yaml\n${text}\n\`\`\``;
const FLOW = '---\nflowdoc_version: "0.1"\nflow: f\ntenant: t\n---\n## Step: a\n```ntd\n{"x": 1}\n```\n';

test('an example section reads into its spec: input, now, stubs, expectations', () => {
  const text = `${FLOW}\n${section(
    'ok',
    yaml(
      'input: {id: 1}\nnow: 2026-05-01T12:00:00Z\nstubs:\n  call: [timeout, {status: 201, body: {a: 1}}]\nexpect:\n  status: 200\n  body_paths: {$.x: 1}',
    ),
  )}`;
  const { examples, problems } = parseExamples(text, 'f.flow.md');
  assert.deepEqual(problems, []);
  assert.equal(examples.length, 1);
  const [e] = examples;
  assert.equal(e!.name, 'ok');
  assert.equal(e!.line, 11);
  assert.deepEqual(e!.spec.input, { id: 1 });
  assert.equal(e!.spec.nowMs, Date.parse('2026-05-01T12:00:00Z'));
  assert.deepEqual(e!.spec.stubs.call, [
    { kind: 'timeout' },
    { kind: 'response', status: 201, headers: {}, body: { a: 1 } },
  ]);
  assert.deepEqual(e!.spec.expect.bodyPaths, { '$.x': 1 });
});

test('body fences put XML where their words say: the input, a step stub, the expected body', () => {
  const text = section(
    'xml',
    `${yaml('expect:\n  status: 200')}\n\`\`\`xml input\n<a><b>1</b></a>\n\`\`\`\n\`\`\`xml stub call\n<r/>\n\`\`\`\n\`\`\`xml expect body\n<ok/>\n\`\`\`\n\`\`\`json\n{"documentation": true}\n\`\`\``,
  );
  const { examples, problems } = parseExamples(text, 'f.test.md');
  assert.deepEqual(problems, []);
  const spec = examples[0]!.spec;
  assert.equal(spec.input, '<a><b>1</b></a>');
  assert.equal(spec.contentType, 'application/xml');
  assert.deepEqual(spec.stubs.call, [
    { kind: 'response', status: 200, headers: { 'content-type': 'text/xml' }, body: '<r/>' },
  ]);
  assert.equal(spec.expect.body, '<ok/>');
});

/** One defect, one problem, at its line. */
const PROBLEMS: { name: string; text: string; line: number; message: RegExp }[] = [
  { name: 'no yaml block', text: section('a', 'prose only'), line: 1, message: /no ```yaml block/ },
  {
    name: 'two yaml blocks',
    text: section('a', `${yaml('expect: {status: 200}')}\n${yaml('expect: {status: 200}')}`),
    line: 6,
    message: /2 ```yaml blocks/,
  },
  { name: 'a nameless example', text: section('', yaml('expect: {status: 200}')), line: 1, message: /needs a name/ },
  {
    name: 'YAML that does not parse',
    text: section('a', yaml('expect:\n  status: [200')),
    line: 5,
    message: /YAML does not parse/,
  },
  {
    name: 'an unknown top key',
    text: section('a', yaml('inptu: {}\nexpect: {status: 200}')),
    line: 4,
    message: /inptu: unknown key/,
  },
  {
    name: 'an unknown expect key',
    text: section('a', yaml('expect:\n  stauts: 200')),
    line: 5,
    message: /expect\.stauts: unknown key; known here: status/,
  },
  { name: 'no expect', text: section('a', yaml('input: {}')), line: 3, message: /expect: is missing/ },
  { name: 'an empty expect', text: section('a', yaml('expect: {}')), line: 4, message: /expect: is empty/ },
  {
    name: 'a status out of range',
    text: section('a', yaml('expect:\n  status: 1000')),
    line: 5,
    message: /expect\.status: must be an HTTP status/,
  },
  {
    name: 'an unknown outcome',
    text: section('a', yaml('expect:\n  outcome: done')),
    line: 5,
    message: /must be one of completed, fault_handled/,
  },
  {
    name: 'a bad stub',
    text: section('a', yaml('stubs:\n  call: down\nexpect: {status: 200}')),
    line: 5,
    message: /stubs\.call: must be "refused", "timeout"/,
  },
  {
    name: 'an unknown stub key',
    text: section('a', yaml('stubs:\n  call: {stauts: 200}\nexpect: {status: 200}')),
    line: 5,
    message: /stubs\.call\.stauts: unknown key/,
  },
  {
    name: 'a bad now',
    text: section('a', yaml('now: yesterday\nexpect: {status: 200}')),
    line: 4,
    message: /now: must be an ISO 8601 instant/,
  },
  {
    name: 'a bad door',
    text: section('a', yaml('door: grpc\nexpect: {status: 200}')),
    line: 4,
    message: /door: must be run, enqueue or cron/,
  },
  {
    name: 'attempts of zero',
    text: section('a', yaml('expect:\n  attempts: 0')),
    line: 5,
    message: /attempts: must be a whole number/,
  },
  {
    name: 'input given twice',
    text: section('a', `${yaml('input: {}\nexpect: {status: 200}')}\n\`\`\`json input\n{}\n\`\`\``),
    line: 7,
    message: /input is given twice/,
  },
  {
    name: 'a JSON fence that is not JSON',
    text: section('a', `${yaml('expect: {status: 200}')}\n\`\`\`json input\n{x\n\`\`\``),
    line: 6,
    message: /is not JSON/,
  },
  {
    name: 'a later step with a bad duration',
    text: section('a', yaml('expect: {status: 200}\nthen:\n  - after: soon\n    expect: {status: 200}')),
    line: 6,
    message: /then\.0\.after: must be a duration such as 90s/,
  },
  {
    name: 'a later step without expect',
    text: section('a', yaml('expect: {status: 200}\nthen:\n  - after: 1h')),
    line: 6,
    message: /then\.0\.expect: is missing/,
  },
  {
    name: 'a later step with an unknown key',
    text: section('a', yaml('expect: {status: 200}\nthen:\n  - aftr: 1h\n    expect: {status: 200}')),
    line: 6,
    message: /then\.0\.aftr: unknown key; known here: after, door/,
  },
  {
    name: 'a duplicate name',
    text: section('a', yaml('expect: {status: 200}')) + section('a', yaml('expect: {status: 200}')),
    line: 6,
    message: /two examples of this file are named "a"/,
  },
];

for (const c of PROBLEMS)
  test(`a spec problem is named at its line: ${c.name}`, () => {
    const { problems, examples } = parseExamples(c.text, 'f.test.md');
    assert.equal(problems.length, 1, JSON.stringify(problems));
    assert.match(problems[0]!.message, c.message);
    assert.equal(problems[0]!.line, c.line, problems[0]!.message);
    assert.equal(examples.length, c.name === 'a duplicate name' ? 1 : 0);
  });

test('a heading inside a fence, and an example heading of another level, are read as what they are', () => {
  const text = `\`\`\`markdown\n## Example: quoted\n\`\`\`\n${section('real', yaml('expect: {status: 200}'))}### Example: nested\n\n${yaml('expect: {status: 201}')}\n# Next part\n\n${yaml('not: an example')}\n`;
  const { examples, problems } = parseExamples(text, 'f.test.md');
  assert.deepEqual(problems, []);
  assert.deepEqual(
    examples.map((e) => [e.name, e.spec.expect.status]),
    [
      ['real', 200],
      ['nested', 201],
    ],
  );
});
