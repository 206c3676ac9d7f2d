import { test } from 'node:test';
import assert from 'node:assert/strict';
import { XmlValue } from '../common/xml-value.js';
import { buildHeaders } from './headers.js';
import { ExecutionLimiter } from './limiter.js';
import { encodeOutput } from './output.js';

test('buildHeaders lowercases names and joins duplicates with a comma', () => {
  assert.deepEqual(buildHeaders({ 'X-Req': 'a', Accept: ['text/plain', 'application/json'] }), {
    'x-req': 'a',
    accept: 'text/plain, application/json',
  });
  assert.deepEqual(buildHeaders(['X-A', '1', 'x-a', '2', 'Host', 'h']), { 'x-a': '1, 2', host: 'h' });
});

test('buildHeaders strips hop-by-hop headers and those named in Connection', () => {
  const h = buildHeaders({
    connection: 'keep-alive, X-Drop',
    'keep-alive': 'timeout=5',
    'proxy-connection': 'x',
    'transfer-encoding': 'chunked',
    te: 'trailers',
    trailer: 'x',
    upgrade: 'h2c',
    'x-drop': 'gone',
    'x-keep': 'kept',
  });
  assert.deepEqual(h, { 'x-keep': 'kept' });
});

test('credentials never enter ctx.headers', () => {
  const h = buildHeaders({
    Authorization: 'Bearer svk_x',
    'Proxy-Authorization': 'b',
    Cookie: 'c=1',
    'X-Api-Key': 'k',
    'x-ok': '1',
  });
  assert.deepEqual(h, { 'x-ok': '1' });
});

test('encodeOutput types each kind of output', () => {
  assert.deepEqual(encodeOutput({ a: 1 }), { body: '{"a":1}', contentType: 'application/json' });
  assert.deepEqual(encodeOutput([1, true]), { body: '[1,true]', contentType: 'application/json' });
  assert.deepEqual(encodeOutput(42), { body: '42', contentType: 'application/json' });
  assert.deepEqual(encodeOutput('plain'), { body: 'plain', contentType: 'text/plain; charset=utf-8' });
  assert.deepEqual(encodeOutput(null), { body: undefined, contentType: undefined });
  assert.deepEqual(encodeOutput(undefined), { body: undefined, contentType: undefined });
  assert.deepEqual(encodeOutput(new XmlValue('<a/>', 'a')), {
    body: '<a/>',
    contentType: 'application/xml; charset=utf-8',
  });
});

test('the limiter refuses past its bound and frees slots on release', () => {
  const l = new ExecutionLimiter(2);
  assert.equal(l.tryAcquire(), true);
  assert.equal(l.tryAcquire(), true);
  assert.equal(l.tryAcquire(), false);
  l.release();
  assert.equal(l.inFlight, 1);
  assert.equal(l.tryAcquire(), true);
  assert.throws(() => new ExecutionLimiter(0), RangeError);
});
