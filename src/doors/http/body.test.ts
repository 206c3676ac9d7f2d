import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { SvcError } from '../../common/errors.js';
import { answerMustClose, readBody } from './body.js';

/** A request body as readBody sees it: a stream with the headers Node parsed. */
function request(headers: Record<string, string> = {}): PassThrough & IncomingMessage {
  return Object.assign(new PassThrough(), { headers, complete: false }) as unknown as PassThrough & IncomingMessage;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return err instanceof SvcError ? err.code : String(err);
  }
}

describe('readBody: the body time limit (request_body_timeout_secs)', () => {
  it('a body that arrives in the same turn is read whole', async () => {
    const req = request();
    const read = readBody(req, 1024, 200);
    req.end('{"id":"o-1"}');
    assert.equal((await read).toString(), '{"id":"o-1"}');
  });

  it('a body that never ends is refused with 408 once its limit passes, and its answer closes the connection', async () => {
    const req = request();
    const began = performance.now();
    const code = await codeOf(readBody(req, 1024, 300));
    const waited = performance.now() - began;
    assert.equal(code, 'SVC_ERR_REQUEST_TIMEOUT');
    assert.ok(waited >= 290 && waited < 1500, `refused after ${waited.toFixed(0)} ms (limit 300)`);
    assert.equal(answerMustClose(req), true);
  });

  it('the limit runs from the start of the read, not from the end of its turn: a turn held busy counts against it', async () => {
    const req = request();
    const began = performance.now();
    const read = readBody(req, 1024, 300);
    // Keep this turn busy for 200 ms: the timer is armed only after it, with 100 ms left.
    while (performance.now() - began < 200);
    const code = await codeOf(read);
    const waited = performance.now() - began;
    assert.equal(code, 'SVC_ERR_REQUEST_TIMEOUT');
    assert.ok(waited < 450, `refused after ${waited.toFixed(0)} ms (limit 300, 200 of it spent in the turn)`);
  });

  it('a body that ends after its turn but inside the limit is read whole (its timer is cleared, not fired)', async () => {
    const req = request();
    const read = readBody(req, 1024, 300);
    await sleep(50);
    req.write('{"a":');
    await sleep(50);
    req.end('1}');
    assert.equal((await read).toString(), '{"a":1}');
    assert.equal(answerMustClose(req), false);
  });

  it('a body over the ceiling is refused with 413 at once, and no timer fires for it later', async () => {
    const req = request();
    const read = readBody(req, 4, 100);
    req.write('123456');
    assert.equal(await codeOf(read), 'SVC_ERR_PAYLOAD_TOO_LARGE');
    await sleep(200); // a timer left armed would reject a settled promise: harmless, but it must not throw either
    assert.equal(answerMustClose(req), true);
  });

  it('many reads in one turn each keep their own limit', async () => {
    const reqs = Array.from({ length: 50 }, () => request());
    const reads = reqs.map((r, i) => readBody(r, 1024, i % 2 === 0 ? 150 : 5000));
    reqs.forEach((r, i) => {
      if (i % 2 === 1) setTimeout(() => r.end('{}'), 250);
    });
    const codes = await Promise.all(reads.map(codeOf));
    codes.forEach((c, i) => assert.equal(c, i % 2 === 0 ? 'SVC_ERR_REQUEST_TIMEOUT' : 'resolved', `read ${i}`));
  });
});
