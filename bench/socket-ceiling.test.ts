// The ceiling row of bench:peers answers the peers' contract as the harness's probe checks it, and
// keeps a connection's requests apart however they arrive: pipelined in one write, or one request
// cut across several.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { spawnListening, type Child } from './load.js';
import { SOCKET_CEILING_SOURCE } from './socket-ceiling.js';

/** Each test's bound: a server that never answered would otherwise hold the suite up for good. */
const BOUNDED = { timeout: 10_000 };

let server: Child;
before(async () => {
  server = await spawnListening(process.execPath, ['-e', SOCKET_CEILING_SOURCE]);
});
after(async () => server.stop());

const request = (id: string): string => {
  const body = JSON.stringify({ id, tenant: 'acme-corp', data: { amount: 129.9 } });
  return `POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
};

/** The answers' bodies in what a connection received, in order. */
const ANSWERS = /\{"ok":true,"id":[^}]*\}/g;

/** Writes `parts` one by one (a pause between) and collects what comes back until `answers` bodies arrived. */
async function exchange(parts: readonly string[], answers: number): Promise<string[]> {
  const { port } = new URL(server.url);
  const socket: Socket = connect(Number(port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let text = '';
  const done = new Promise<void>((resolve) => {
    socket.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      if ((text.match(ANSWERS) ?? []).length >= answers) resolve();
    });
  });
  for (const part of parts) {
    socket.write(part);
    await new Promise((r) => setTimeout(r, 20));
  }
  await done;
  socket.destroy();
  return text.match(ANSWERS) ?? [];
}

test('answers the contract: 200, {"ok":true,"id":<the id sent>}, as fetch (the probe) sees it', BOUNDED, async () => {
  const res = await fetch(`${server.url}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'evt-0001', data: {} }),
  });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { ok: true, id: 'evt-0001' });
});

test('two requests in one write get two answers, in order', BOUNDED, async () => {
  assert.deepEqual(await exchange([request('a-1') + request('a-2')], 2), [
    '{"ok":true,"id":"a-1"}',
    '{"ok":true,"id":"a-2"}',
  ]);
});

test('a request cut across three writes is answered once, after its last byte', BOUNDED, async () => {
  const whole = request('cut-1');
  const cuts = [whole.slice(0, 30), whole.slice(30, whole.length - 10), whole.slice(whole.length - 10)];
  assert.deepEqual(await exchange([...cuts, request('cut-2')], 2), [
    '{"ok":true,"id":"cut-1"}',
    '{"ok":true,"id":"cut-2"}',
  ]);
});
