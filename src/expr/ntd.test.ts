import { test } from 'node:test';
import assert from 'node:assert/strict';
import { XmlValue } from '../common/xml-value.js';
import { checkNtd, compileNtd, detectNtdFormat, rootName } from './ntd.js';

const ctx = {
  input: { id: 'a"1', total: 12.5, tags: ['x'], xml: new XmlValue('<b>ok</b>', 'b') },
  correlation_id: 'c',
};

test('the body format is decided by its first non-blank character', () => {
  assert.equal(detectNtdFormat('  {"a":1}'), 'json');
  assert.equal(detectNtdFormat('[1]'), 'json');
  assert.equal(detectNtdFormat('\n<a/>'), 'xml');
  assert.equal(detectNtdFormat('hello'), 'text');
});

test('JSON: bare and whole-string holes take typed values, others interpolate escaped', () => {
  const body =
    '{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.total }}, "tags": "{{ ctx.input.tags }}", "msg": "id {{ ctx.input.id }}!"}';
  const out = compileNtd({ format: 'json', body })(ctx);
  assert.deepEqual(out, { id: 'a"1', price: 12.5, tags: ['x'], msg: 'id a"1!' });
});

test('JSON: a body that is one hole renders the value itself', () => {
  assert.deepEqual(compileNtd({ format: 'json', body: '{{ ctx.input.tags }}' })(ctx), ['x']);
});

test('JSON: each render returns a fresh object', () => {
  const f = compileNtd({ format: 'json', body: '{"a": {"b": 1}}' });
  const a = f(ctx) as { a: { b: number } };
  a.a.b = 2;
  assert.deepEqual(f(ctx), { a: { b: 1 } });
});

test('JSON: a body that does not parse is a problem', () => {
  assert.match(checkNtd({ format: 'json', body: '{"a": }' })?.message ?? '', /does not parse/);
  assert.equal(checkNtd({ format: 'json', body: '{"a": {{ ctx.x }} }' }), undefined);
});

test('JSON: a body may nest as deep as a value may (128 levels), no deeper; far deeper is refused, not a stack overflow', () => {
  const body = (depth: number) => `${'['.repeat(depth)}{{ ctx.input.id }}${']'.repeat(depth)}`;
  assert.equal(checkNtd({ format: 'json', body: body(128) }), undefined);
  let out = compileNtd({ format: 'json', body: body(128) })(ctx);
  for (let i = 0; i < 128; i++) out = (out as unknown[])[0];
  assert.equal(out, 'a"1');
  for (const depth of [129, 10_000]) {
    assert.match(
      checkNtd({ format: 'json', body: body(depth) })?.message ?? '',
      /the JSON body nests deeper than 128 levels/,
    );
    assert.throws(() => compileNtd({ format: 'json', body: body(depth) }), /nests deeper than 128 levels/);
  }
});

test('XML: holes are escaped, XmlValue inserted as markup, the result is an XmlValue', () => {
  const f = compileNtd({
    format: 'xml',
    body: '<?xml version="1.0"?>\n<ns:order id="{{ ctx.input.id }}">{{ ctx.input.xml }}</ns:order>\n',
  });
  const out = f(ctx);
  assert.ok(out instanceof XmlValue);
  assert.equal(out.root, 'order');
  assert.equal(out.xml, '<?xml version="1.0"?>\n<ns:order id="a&quot;1"><b>ok</b></ns:order>');
  assert.equal(rootName('<!-- c --><x:y/>'), 'y');
});

test('text bodies interpolate', () => {
  assert.equal(compileNtd({ format: 'text', body: 'total={{ ctx.input.total }}' })(ctx), 'total=12.5');
});
