import { Metadata } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { invokeMeta } from './server.js';

it('credentials in gRPC metadata never reach ctx.headers, like on HTTP', () => {
  const md = new Metadata();
  for (const [k, v] of [
    ['authorization', 'Bearer svk_x'],
    ['proxy-authorization', 'Basic y'],
    ['cookie', 'sid=1'],
    ['x-api-key', 'k'],
    ['x-correlation-id', 'corr-7'],
    ['x-ref', 'r9'],
  ])
    md.set(k!, v!);
  const meta = invokeMeta(md);
  assert.equal(meta.correlationId, 'corr-7');
  assert.equal(meta.headers['x-ref'], 'r9');
  for (const name of ['authorization', 'proxy-authorization', 'cookie', 'x-api-key'])
    assert.equal(meta.headers[name], undefined, name);
});
