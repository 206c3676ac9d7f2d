import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorAnswer, writeAnswerTo, type HttpAnswer } from './answer.js';
import { installLeanFront, MAX_UNSERVED_BYTES, type LeanExchange, type LeanFront } from './lean-front.js';

/** Bodies above this are refused by the test's route (its ceiling). */
const ROUTE_LIMIT = 1000;
const BODY_TIMEOUT_MS = 400;

/** The route the lean front serves in these tests: echoes the body, or answers what the body asks. */
function serveLean(ex: LeanExchange): void {
  const answer = (a: HttpAnswer) => writeAnswerTo(ex, a);
  let read: Buffer | Promise<Buffer>;
  try {
    read = ex.readBody(ROUTE_LIMIT, BODY_TIMEOUT_MS);
  } catch (err) {
    return answer(errorAnswer(err));
  }
  // A body already whole that asks for it is answered at once, inside the front's own loop. One
  // that came in two reads (a read can end anywhere in a pipelined stream) gets the same answer a
  // turn later, so what a test sees never depends on where the kernel cut the bytes.
  if (Buffer.isBuffer(read) && read.toString() === 'sync') return answer({ status: 200, headers: {}, body: 's' });
  void Promise.resolve(read).then(
    (body) => {
      const text = body.toString();
      if (text === 'sync') return answer({ status: 200, headers: {}, body: 's' });
      if (text === 'bad-header') return answer({ status: 200, headers: { 'x-bad': 'a\r\nb' }, body: 'x' });
      if (text === 'later') return void setTimeout(() => answer({ status: 200, headers: {}, body: 'lean:later' }), 50);
      answer({ status: 200, headers: { 'content-type': 'text/plain' }, body: `lean:${ex.url}:${text}` });
    },
    (err: unknown) => answer(errorAnswer(err)),
  );
}

function post(path: string, body: string, extra = ''): string {
  return `POST ${path} HTTP/1.1\r\nHost: t\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

interface Response {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw client: what it sends is exactly what is written; responses are parsed as they come. */
class Client {
  data = '';
  ended = false;
  readonly socket: Socket;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (d: string) => (this.data += d));
    this.socket.on('close', () => (this.ended = true));
    this.socket.on('error', () => {});
  }

  send(text: string): void {
    this.socket.write(Buffer.from(text, 'latin1'));
  }

  /** Waits for `n` whole responses (or the connection's end) and takes them off the buffer. */
  async responses(n: number, timeoutMs = 3000): Promise<Response[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = parseResponses(this.data);
      if (got.responses.length >= n || this.ended) {
        this.data = this.data.slice(got.consumed);
        return got.responses;
      }
      if (Date.now() > deadline) throw new Error(`timed out with ${JSON.stringify(this.data)}`);
      await sleep(5);
    }
  }

  async closed(timeoutMs = 3000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended && Date.now() < deadline) await sleep(5);
    return this.ended;
  }
}

function parseResponses(text: string): { responses: Response[]; consumed: number } {
  const responses: Response[] = [];
  let pos = 0;
  for (;;) {
    const end = text.indexOf('\r\n\r\n', pos);
    if (end === -1) break;
    const [statusLine, ...lines] = text.slice(pos, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (text.length < end + 4 + length) break;
    responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4, end + 4 + length) });
    pos = end + 4 + length;
  }
  return { responses, consumed: pos };
}

describe('the lean front', () => {
  let server: Server;
  let front: LeanFront;
  let port: number;
  const clients: Client[] = [];
  const client = () => {
    const c = new Client(port);
    clients.push(c);
    return c;
  };

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.end(`node:${req.method} ${req.url}:${Buffer.concat(chunks).toString()}`));
    });
    front = installLeanFront(server, { serve: serveLean, serves: (route) => route === 'run' });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    for (const c of clients) c.socket.destroy();
    server.close();
  });

  it('answers a plain POST itself, with the headers node:http would add, and keeps the connection', async () => {
    const c = client();
    c.send(post('/flows/a/b/run', '{"x":1}'));
    const [r] = await c.responses(1);
    assert.equal(r!.status, 200);
    assert.equal(r!.body, 'lean:/flows/a/b/run:{"x":1}');
    assert.equal(r!.headers['content-type'], 'text/plain');
    assert.equal(r!.headers.connection, 'keep-alive');
    assert.equal(r!.headers['keep-alive'], `timeout=${Math.floor(server.keepAliveTimeout / 1000)}`);
    assert.match(r!.headers.date!, /GMT$/);
    c.send(post('/flows/a/b/run', 'two'));
    assert.equal((await c.responses(1))[0]!.body, 'lean:/flows/a/b/run:two');
    assert.equal(c.ended, false);
  });

  it('answers pipelined requests in order, the slow one first', async () => {
    const c = client();
    c.send(post('/flows/a/b/run', 'later') + post('/flows/a/b/run', 'second') + post('/flows/a/b/run', 'third'));
    const got = await c.responses(3);
    assert.deepEqual(
      got.map((r) => r.body),
      ['lean:later', 'lean:/flows/a/b/run:second', 'lean:/flows/a/b/run:third'],
    );
  });

  it('serves a head and a body that arrive byte by byte', async () => {
    const c = client();
    for (const ch of post('/flows/a/b/run', 'slowly')) {
      c.send(ch);
      await sleep(1);
    }
    assert.equal((await c.responses(1))[0]!.body, 'lean:/flows/a/b/run:slowly');
  });

  it('hands the connection to node:http at the first request it does not serve, with the bytes it holds, and node:http keeps it', async () => {
    const c = client();
    c.send(post('/flows/a/b/run', 'one') + `GET /health HTTP/1.1\r\nHost: t\r\n\r\n` + post('/flows/a/b/run', 'three'));
    const got = await c.responses(3);
    assert.deepEqual(
      got.map((r) => r.body),
      ['lean:/flows/a/b/run:one', 'node:GET /health:', 'node:POST /flows/a/b/run:three'],
    );
    c.send(post('/flows/a/b/run', 'four'));
    assert.equal((await c.responses(1))[0]!.body, 'node:POST /flows/a/b/run:four');
  });

  it('leaves a connection whose first request is not its own to node:http: a route it does not serve, a chunked body', async () => {
    const enqueue = client();
    enqueue.send(post('/flows/a/b/enqueue', 'q'));
    assert.equal((await enqueue.responses(1))[0]!.body, 'node:POST /flows/a/b/enqueue:q');
    const chunked = client();
    chunked.send('POST /flows/a/b/run HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n');
    assert.equal((await chunked.responses(1))[0]!.body, 'node:POST /flows/a/b/run:hi');
  });

  it("a head split across writes whose end turns out to be node:http's is handed over whole", async () => {
    const c = client();
    c.send('POST /flows/a/b/run HTTP/1.1\r\nHost: t\r\n');
    await sleep(20);
    c.send('Expect: 100-continue\r\nContent-Length: 2\r\n\r\n');
    const [interim] = await c.responses(1);
    assert.equal(interim!.status, 100);
    c.send('ok');
    assert.equal((await c.responses(1))[0]!.body, 'node:POST /flows/a/b/run:ok');
  });

  it("refuses a declared body over the route's ceiling with 413 and closes the connection", async () => {
    const c = client();
    c.send(post('/flows/a/b/run', 'x'.repeat(ROUTE_LIMIT + 1)));
    const [r] = await c.responses(1);
    assert.equal(r!.status, 413);
    assert.equal(r!.headers.connection, 'close');
    assert.equal(await c.closed(), true);
  });

  it('answers 408 to a body that stops arriving, and closes the connection', async () => {
    const c = client();
    c.send('POST /flows/a/b/run HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc');
    const started = Date.now();
    const [r] = await c.responses(1, 5000);
    assert.equal(r!.status, 408);
    assert.ok(Date.now() - started >= BODY_TIMEOUT_MS - 50, 'not before the body timeout');
    assert.equal(r!.headers.connection, 'close');
    assert.equal(await c.closed(), true);
  });

  it('answers 408 to a head that stops arriving, and closes the connection', async () => {
    const saved = server.headersTimeout;
    server.headersTimeout = 300;
    try {
      const c = client();
      c.send('POST /flows/a/b/run HTTP/1.1\r\nHost: t\r\n');
      const [r] = await c.responses(1, 5000);
      assert.equal(r!.status, 408);
      assert.equal(await c.closed(), true);
    } finally {
      server.headersTimeout = saved;
    }
  });

  it('closes a connection idle past the keep-alive timeout', async () => {
    const saved = server.keepAliveTimeout;
    server.keepAliveTimeout = 300;
    try {
      const c = client();
      c.send(post('/flows/a/b/run', 'x'));
      await c.responses(1);
      assert.equal(await c.closed(2000), true);
    } finally {
      server.keepAliveTimeout = saved;
    }
  });

  it('ends the connection after the answer to `Connection: close`', async () => {
    const c = client();
    c.send(post('/flows/a/b/run', 'bye', 'Connection: close\r\n') + post('/flows/a/b/run', 'never'));
    const got = await c.responses(2);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.headers.connection, 'close');
    assert.equal(await c.closed(), true);
  });

  it('answers 500 instead of an answer whose header node:http would refuse, and goes on serving', async () => {
    const c = client();
    c.send(post('/flows/a/b/run', 'bad-header'));
    const [r] = await c.responses(1);
    assert.equal(r!.status, 500);
    assert.equal(r!.headers['x-bad'], undefined);
    c.send(post('/flows/a/b/run', 'after'));
    assert.equal((await c.responses(1))[0]!.body, 'lean:/flows/a/b/run:after');
  });

  it('answers a thousand pipelined requests sent in one write, in order', async () => {
    const c = client();
    let text = '';
    for (let i = 0; i < 1000; i++) text += post('/flows/a/b/run', String(i));
    c.send(text);
    const got = await c.responses(1000, 10_000);
    assert.deepEqual(
      got.map((r) => r.body),
      Array.from({ length: 1000 }, (_, i) => `lean:/flows/a/b/run:${i}`),
    );
  });

  it('answers 20,000 pipelined requests answered at once, sent in one write, without nesting a loop per request', async () => {
    const c = client();
    c.send(post('/flows/a/b/run', 'sync').repeat(20_000));
    const got = await c.responses(20_000, 20_000);
    assert.equal(got.length, 20_000);
    assert.ok(got.every((r) => r.status === 200 && r.body === 's'));
    c.send(post('/flows/a/b/run', 'after'));
    assert.equal((await c.responses(1))[0]!.body, 'lean:/flows/a/b/run:after');
  });

  it('stops reading from a client that sends without reading its answers, and serves all of it once the client reads', async () => {
    const c = client();
    c.socket.pause();
    const count = 100_000;
    c.send(post('/flows/a/b/run', 'sync').repeat(count));
    await sleep(500);
    // Its answers fill the socket, so the server serves no more of it, holds at most its bound
    // and one read unserved, and reads no further (the rest waits in the kernel's buffers).
    const held = front.unservedBytes();
    assert.ok(held > 0 && held <= MAX_UNSERVED_BYTES + 64 * 1024, `${held} bytes held unserved`);
    c.socket.resume();
    const got = await c.responses(count, 20_000);
    assert.equal(got.length, count);
    assert.ok(got.every((r) => r.body === 's'));
  });

  it('when the server closes: an idle connection ends at once, one in flight once its answer is written', async () => {
    const idle = client();
    idle.send(post('/flows/a/b/run', 'x'));
    await idle.responses(1);
    const busy = client();
    busy.send('POST /flows/a/b/run HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nla');
    await sleep(50);
    front.close();
    assert.equal(await idle.closed(), true);
    busy.send('st');
    const [r] = await busy.responses(1);
    assert.equal(r!.body, 'lean:/flows/a/b/run:last');
    assert.equal(await busy.closed(), true);
    front.closing = false;
  });
});
