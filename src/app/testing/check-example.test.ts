import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkExample } from './check-example.js';
import type { ExampleRun } from './run-example.js';

const run = (over: Partial<ExampleRun>): ExampleRun => ({
  status: 200,
  headers: {},
  body: null,
  bodyKind: 'empty',
  outcome: 'completed',
  steps: [],
  published: {},
  calls: [],
  strayStubs: [],
  ...over,
});
const xml = (body: string) => run({ body, bodyKind: 'xml' });

test('an XML body is compared as markup: layout does not count; the root, a prefix, a namespace, an attribute do', () => {
  const answer = '<?xml version="1.0"?><q:order xmlns:q="urn:a" id="1">\n  <q:line>x</q:line>\n</q:order>';
  assert.deepEqual(
    checkExample({ body: "<q:order id='1' xmlns:q='urn:a'><q:line>x</q:line></q:order>" }, xml(answer)),
    [],
  );
  for (const changed of [
    '<q:invoice xmlns:q="urn:a" id="1"><q:line>x</q:line></q:invoice>',
    '<p:order xmlns:p="urn:a" id="1"><p:line>x</p:line></p:order>',
    '<q:order xmlns:q="urn:b" id="1"><q:line>x</q:line></q:order>',
    '<q:order xmlns:q="urn:a" id="2"><q:line>x</q:line></q:order>',
    '<q:order xmlns:q="urn:a" id="1"><q:line>y</q:line></q:order>',
  ])
    assert.notDeepEqual(checkExample({ body: changed }, xml(answer)), [], changed);
});

test('a stub named for no step that calls out fails the example, naming it', () => {
  const m = checkExample({ status: 200 }, run({ strayStubs: ['prcie'] }));
  assert.deepEqual(
    m.map((x) => x.what),
    ['stubs.prcie'],
  );
});

test('a failure nobody expected fails an example that checks only the body; expecting it passes', () => {
  const failed = run({ outcome: 'failed', status: 502, error: 'step x: refused' });
  assert.equal(checkExample({ bodyPaths: {} }, failed)[0]!.what, 'outcome');
  assert.deepEqual(checkExample({ outcome: 'failed' }, failed), []);
  assert.deepEqual(checkExample({ status: 502 }, failed), []);
});
