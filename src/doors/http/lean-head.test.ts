import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { LEAN_MAX_BODY_BYTES, LEAN_MAX_HEAD_BYTES, LEAN_MAX_HEADERS, readLeanHead } from './lean-head.js';

const RUN = 'POST /flows/acme/echo/run HTTP/1.1';

/** Reads a head given as lines (joined by CRLF, the blank line added). */
function read(...lines: string[]) {
  const text = `${lines.join('\r\n')}\r\n\r\n`;
  const buf = Buffer.from(text, 'latin1');
  return readLeanHead(buf, buf.indexOf('\r\n\r\n'));
}

/** Heads the lean front serves itself, with what it must read of them. */
const SERVED: {
  name: string;
  lines: string[];
  headers: Record<string, string>;
  rawHeaders?: string[];
  contentLength?: number;
  close?: boolean;
}[] = [
  {
    name: 'a plain POST with a body',
    lines: [RUN, 'Host: x', 'Content-Type: application/json', 'Content-Length: 12'],
    headers: { host: 'x', 'content-type': 'application/json', 'content-length': '12' },
    rawHeaders: ['Host', 'x', 'Content-Type', 'application/json', 'Content-Length', '12'],
    contentLength: 12,
  },
  { name: 'no Content-Length: an empty body', lines: [RUN, 'host: x'], headers: { host: 'x' }, contentLength: 0 },
  {
    name: 'values trimmed of spaces and tabs, names lowercased in headers only',
    lines: [RUN, 'HOST:x', 'X-Request-ID: \t abc \t'],
    headers: { host: 'x', 'x-request-id': 'abc' },
    rawHeaders: ['HOST', 'x', 'X-Request-ID', 'abc'],
  },
  {
    name: 'an empty value',
    lines: [RUN, 'host: x', 'x-empty:'],
    headers: { host: 'x', 'x-empty': '' },
  },
  {
    name: 'Connection: keep-alive',
    lines: [RUN, 'host: x', 'Connection: Keep-Alive'],
    headers: { host: 'x', connection: 'Keep-Alive' },
  },
  {
    name: 'Connection: close',
    lines: [RUN, 'host: x', 'connection: close'],
    headers: { host: 'x', connection: 'close' },
    close: true,
  },
  {
    name: 'the largest body it buffers',
    lines: [RUN, 'host: x', `content-length: ${LEAN_MAX_BODY_BYTES}`],
    headers: { host: 'x', 'content-length': String(LEAN_MAX_BODY_BYTES) },
    contentLength: LEAN_MAX_BODY_BYTES,
  },
  {
    name: '/enqueue with a query',
    lines: ['POST /flows/a/b/enqueue?x=1 HTTP/1.1', 'host: x'],
    headers: { host: 'x' },
  },
  {
    name: 'a header named like an Object.prototype member',
    lines: [RUN, 'host: x', '__proto__: 1', 'constructor: 2'],
    headers: { host: 'x', ['__proto__']: '1', constructor: '2' },
  },
];

/** Heads left to node:http, which is the judge of each (it answers, refuses or serves them). */
const LEFT: { name: string; lines: string[] }[] = [
  { name: 'GET', lines: ['GET /flows/acme/echo/run HTTP/1.1', 'host: x'] },
  { name: 'a lowercase method', lines: ['post /flows/acme/echo/run HTTP/1.1', 'host: x'] },
  { name: 'HTTP/1.0', lines: ['POST /flows/acme/echo/run HTTP/1.0', 'host: x'] },
  { name: 'HTTP/2 in the request line', lines: ['POST /flows/acme/echo/run HTTP/2.0', 'host: x'] },
  { name: 'another route', lines: ['POST /flows/acme/echo/metadata HTTP/1.1', 'host: x'] },
  { name: 'the UI', lines: ['POST /ui/login HTTP/1.1', 'host: x'] },
  { name: 'two spaces in the request line', lines: ['POST  /flows/acme/echo/run HTTP/1.1', 'host: x'] },
  { name: 'a space in the target', lines: ['POST /flows/acme/ec ho/run HTTP/1.1', 'host: x'] },
  { name: 'a byte above 0x7e in the target', lines: ['POST /flows/acme/\u00e9/run HTTP/1.1', 'host: x'] },
  { name: 'no Host', lines: [RUN, 'content-length: 2'] },
  { name: 'Transfer-Encoding', lines: [RUN, 'host: x', 'transfer-encoding: chunked'] },
  {
    name: 'Transfer-Encoding beside Content-Length',
    lines: [RUN, 'host: x', 'content-length: 2', 'Transfer-Encoding: chunked'],
  },
  { name: 'Expect', lines: [RUN, 'host: x', 'expect: 100-continue'] },
  { name: 'Upgrade', lines: [RUN, 'host: x', 'upgrade: websocket'] },
  { name: 'Connection: upgrade', lines: [RUN, 'host: x', 'connection: upgrade'] },
  { name: 'Connection with two tokens', lines: [RUN, 'host: x', 'connection: keep-alive, close'] },
  { name: 'a repeated Content-Length', lines: [RUN, 'host: x', 'content-length: 2', 'Content-Length: 2'] },
  { name: 'a repeated Authorization', lines: [RUN, 'host: x', 'authorization: a', 'Authorization: b'] },
  { name: 'a repeated unknown header', lines: [RUN, 'host: x', 'x-a: 1', 'x-a: 2'] },
  { name: 'a Content-Length with a sign', lines: [RUN, 'host: x', 'content-length: +2'] },
  { name: 'a Content-Length with a space inside', lines: [RUN, 'host: x', 'content-length: 1 2'] },
  { name: 'a Content-Length of ten digits', lines: [RUN, 'host: x', 'content-length: 0000000001'] },
  { name: 'an empty Content-Length', lines: [RUN, 'host: x', 'content-length:'] },
  { name: 'a body above the lean bound', lines: [RUN, 'host: x', `content-length: ${LEAN_MAX_BODY_BYTES + 1}`] },
  { name: 'a folded header line', lines: [RUN, 'host: x', 'x-a: 1', ' 2'] },
  { name: 'a space before the colon', lines: [RUN, 'host : x'] },
  { name: 'a line without a colon', lines: [RUN, 'host: x', 'nonsense'] },
  { name: 'an empty name', lines: [RUN, 'host: x', ': v'] },
  { name: 'a bare LF inside a value', lines: [RUN, 'host: x', 'x-a: 1\nx-b: 2'] },
  { name: 'a bare CR inside a value', lines: [RUN, 'host: x', 'x-a: 1\rx'] },
  { name: 'a NUL in a value', lines: [RUN, 'host: x', 'x-a: 1\u0000'] },
  { name: 'a vertical tab before a value', lines: [RUN, 'host: x', 'x-a: \u000b1'] },
  { name: 'a byte above 0x7e in a value', lines: [RUN, 'host: x', 'x-a: caf\u00e9'] },
  { name: 'a DEL in a name', lines: [RUN, 'host: x', 'x-\u007fa: 1'] },
  { name: 'a bare LF ending the request line', lines: ['POST /flows/acme/echo/run HTTP/1.1\nhost: x'] },
  {
    name: 'more header lines than it reads',
    lines: [RUN, 'host: x', ...Array.from({ length: LEAN_MAX_HEADERS }, (_, i) => `x-h${i}: 1`)],
  },
];

describe('readLeanHead: the heads the lean front serves itself', () => {
  for (const c of SERVED) {
    it(`serves ${c.name}`, () => {
      const head = readLeanHead(
        Buffer.from(`${c.lines.join('\r\n')}\r\n\r\n`, 'latin1'),
        Buffer.from(c.lines.join('\r\n'), 'latin1').length,
      );
      assert.ok(head !== undefined);
      assert.deepEqual({ ...head.headers }, c.headers);
      assert.equal(Object.getPrototypeOf(head.headers), null, 'a header named __proto__ is a header, not a prototype');
      if (c.rawHeaders !== undefined) assert.deepEqual(head.rawHeaders, c.rawHeaders);
      assert.equal(head.contentLength, c.contentLength ?? 0);
      assert.equal(head.close, c.close ?? false);
      assert.equal(head.url, c.lines[0]!.split(' ')[1]);
    });
  }

  for (const c of LEFT) {
    it(`leaves ${c.name} to node:http`, () => {
      assert.equal(read(...c.lines), undefined);
    });
  }

  it('leaves a head longer than node:http allows to node:http (which answers 431)', () => {
    const filler = 'x'.repeat(LEAN_MAX_HEAD_BYTES);
    assert.equal(read(RUN, 'host: x', `x-big: ${filler}`), undefined);
  });

  it('reads the route from the target', () => {
    const head = read('POST /flows/ac%2Fme/b/enqueue HTTP/1.1', 'host: x');
    assert.deepEqual({ ...head?.route }, { tenant: 'ac%2Fme', name: 'b', route: 'enqueue' });
  });
});

describe('readLeanHead against node:http, on mutated heads', () => {
  /** What node:http made of a request: its target, raw headers and body, or its refusal. */
  type NodeView = { status: number; url?: string; rawHeaders?: string[]; body?: string };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.stringify({
        url: req.url,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString('latin1'),
      });
      res
        .writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          connection: 'close',
        })
        .end(body);
    });
  });
  let port = 0;
  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());

  /** Sends the bytes alone on a connection and reads node:http's answer (its 400 for what it refuses). */
  function nodeView(bytes: Buffer): Promise<NodeView> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (text += d));
      socket.on('error', () => {});
      socket.on('close', () => {
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
        const body = text.slice(text.indexOf('\r\n\r\n') + 4);
        resolve(status === 200 ? { status, ...(JSON.parse(body) as object) } : { status });
      });
      socket.end(bytes);
    });
  }

  /** A small deterministic generator, so a failure names a case that comes back. */
  function random(seed: number): () => number {
    let s = seed;
    return () => {
      s = (s * 1103515245 + 12345) % 2147483648;
      return s / 2147483648;
    };
  }

  const BASE = [RUN, 'Host: t', 'Authorization: Bearer k', 'Content-Type: application/json', 'Content-Length: 2'];
  const PIECES = [
    ' ',
    '\t',
    '\r',
    '\n',
    '\r\n',
    ':',
    '\u0000',
    '\u000b',
    '\u00e9',
    '\u007f',
    ',',
    'a',
    'A',
    '/',
    '%',
    'Content-Length: 2\r\n',
    'Transfer-Encoding: chunked\r\n',
    'Host: u\r\n',
  ];

  it('every mutated head it serves, node:http serves too, reading the same target, headers and body', async () => {
    const next = random(40);
    let served = 0;
    for (let i = 0; i < 400; i++) {
      let text = `${BASE.join('\r\n')}\r\n\r\n`;
      const edits = 1 + Math.floor(next() * 3);
      for (let e = 0; e < edits; e++) {
        // Edits stay inside the head (before its blank line), so the body stays two bytes.
        const at = Math.floor(next() * (text.length - 4));
        if (next() < 0.3) text = text.slice(0, at) + text.slice(at + 1);
        else text = text.slice(0, at) + PIECES[Math.floor(next() * PIECES.length)] + text.slice(at);
      }
      const bytes = Buffer.from(`${text}{}`, 'latin1');
      const end = bytes.indexOf('\r\n\r\n');
      const lean = end === -1 ? undefined : readLeanHead(bytes, end);
      if (lean === undefined) continue;
      served++;
      // The body the head announces, and nothing after it (an edit may have renamed Content-Length).
      const node = await nodeView(bytes.subarray(0, end + 4 + lean.contentLength));
      const c = JSON.stringify(text);
      assert.equal(node.status, 200, `node:http refuses a head the lean front serves: ${c}`);
      assert.equal(node.url, lean.url, c);
      assert.deepEqual(node.rawHeaders, lean.rawHeaders, c);
      assert.equal(node.body, '{}'.slice(0, lean.contentLength), c);
    }
    assert.ok(served > 40, `${served} mutated heads were served`);
  });
});
