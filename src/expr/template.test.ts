import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTemplate, checkTemplateSyntax, compileTemplate, scanTemplate, TemplateSyntaxError } from './template.js';

const ctx = { input: { id: 'a1', n: 3, obj: { k: [1] } }, correlation_id: 'c-1' };

test('a template that is exactly one hole keeps the value type', () => {
  assert.equal(compileTemplate('{{ ctx.input.n }}').render(ctx), 3);
  assert.deepEqual(compileTemplate('  {{ctx.input.obj}} ').render(ctx), { k: [1] });
  assert.equal(compileTemplate('{{ ctx.input.n > 1 }}').single, true);
});

test('other templates interpolate holes as text, objects as JSON', () => {
  assert.equal(compileTemplate('id={{ ctx.input.id }}/{{ ctx.input.n }}').render(ctx), 'id=a1/3');
  assert.equal(compileTemplate('o={{ ctx.input.obj }}').render(ctx), 'o={"k":[1]}');
  assert.equal(compileTemplate('{{ ctx.input.id }}{{ ctx.input.n }}').render(ctx), 'a13');
});

test('a template without holes is constant', () => {
  const t = compileTemplate('plain text');
  assert.equal(t.constant, true);
  assert.equal(t.render(ctx), 'plain text');
});

test('a hole may hold braces and strings containing }}', () => {
  assert.deepEqual(compileTemplate('{{ {"a": {"b": 1}} }}').render(ctx), { a: { b: 1 } });
  assert.equal(compileTemplate('{{ "}}" + ctx.input.id }}').render(ctx), '}}a1');
  assert.equal(scanTemplate('a{{x}}b').length, 3);
});

test('syntax problems are reported with an offset', () => {
  assert.match(checkTemplateSyntax('a {{ ctx.input.id ') ?? '', /never closed/);
  const p = checkTemplate('ab {{ ctx.x + }}');
  assert.ok(p && p.offset >= 3);
  assert.equal(checkTemplateSyntax('x {{ ctx.a }} y'), undefined);
  assert.throws(() => compileTemplate('{{ nope( }}'), TemplateSyntaxError);
});
