/**
 * The lean front: POST .../run and .../enqueue read and answered straight off the socket, without
 * node:http's request and response objects (measured: node:http's own work per request was the
 * largest cost of /run left after the socket write). It takes every connection the HTTP server
 * accepts and serves its requests while each is the plain kind `readLeanHead` recognises; at the
 * first request that is not (another route, a chunked or large body, `Expect`, a repeated header,
 * anything odd), it hands the connection, with the bytes not yet served, to node:http, which serves
 * it from then on. node:http remains the one judge of every unusual request.
 *
 * What it keeps of node:http's behaviour: requests of a connection answered in order, one at a
 * time; the keep-alive timeout, a head timeout (408) and the body timeout (`readBody`'s 408 and
 * connection close); a body given up on closes the connection; `Connection: close`; the server's
 * close (idle connections ended, the others after their answer).
 */
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { Socket } from 'node:net';
import { errorAnswer, writeAnswerTo, type AnswerSink, type HttpAnswer } from './answer.js';
import { bodyTimedOut, DEFAULT_BODY_TIMEOUT_MS, payloadTooLarge, refusalMustClose } from './body.js';
import type { HotRequest } from './hot-request.js';
import { leanAnswerBytes } from './lean-answer.js';
import { LEAN_MAX_BODY_BYTES, LEAN_MAX_HEAD_BYTES, readLeanHead, type LeanHead } from './lean-head.js';

const HEAD_END = Buffer.from('\r\n\r\n');
const EMPTY = Buffer.alloc(0);
/** How often the timeouts are checked, in milliseconds: the precision of every lean timeout. */
const SWEEP_MS = 250;
/** Bytes a connection may hold unserved (pipelined) while a request of it is in flight; past it, reading pauses. */
export const MAX_UNSERVED_BYTES = LEAN_MAX_HEAD_BYTES + LEAN_MAX_BODY_BYTES;

export interface LeanFrontOptions {
  /** Serves one request: the fast path (gate, handler); its answer comes back through `exchange.deliver`. */
  serve(exchange: LeanExchange): void;
  /** True when the fast path has a handler for this route (no queue door: /enqueue is node:http's 404). */
  serves(route: 'run' | 'enqueue'): boolean;
}

/** One request of a lean connection: what the handlers read (HotRequest) and where its answer goes. */
export class LeanExchange implements HotRequest, AnswerSink {
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly url: string;
  /** The body once all of it has arrived. */
  body: Buffer | undefined;
  /** Body bytes arrived so far (before it is whole). */
  chunks: Buffer[] = [];
  received = 0;
  /** A handler waiting for the body, with its deadline on the front's clock. */
  waiter:
    | { resolve(body: Buffer): void; reject(err: unknown): void; readonly deadline: number; readonly timeoutMs: number }
    | undefined;
  /** The body was given up on (too large for the route, too slow): the answer closes the connection. */
  abandoned = false;
  answered = false;

  constructor(
    readonly connection: LeanConnection,
    readonly head: LeanHead,
  ) {
    this.headers = head.headers;
    this.rawHeaders = head.rawHeaders;
    this.url = head.url;
    if (head.contentLength === 0) this.body = EMPTY;
  }

  /** The body, refused with 413 when its declared length passes `limitBytes`, 408 when it has not arrived in `timeoutMs`. */
  readBody(limitBytes: number, timeoutMs: number = DEFAULT_BODY_TIMEOUT_MS): Buffer | Promise<Buffer> {
    if (this.head.contentLength > limitBytes) {
      this.abandoned = true;
      throw payloadTooLarge();
    }
    if (this.body !== undefined) return this.body;
    if (this.abandoned) throw aborted();
    return new Promise<Buffer>((resolve, reject) => {
      // The clock read here, not the front's (up to a sweep old): the deadline is never early.
      this.waiter = { resolve, reject, deadline: performance.now() + timeoutMs, timeoutMs };
    });
  }

  /** Writes the answer (called once, by the fast path). Throws, having written nothing, for an answer node:http would refuse. */
  deliver(answer: HttpAnswer): void {
    this.connection.answer(this, answer);
  }

  /** True when the answer must close the connection because of the body (as `answerMustClose` for node:http). */
  mustClose(): boolean {
    return this.abandoned || (this.body === undefined && refusalMustClose(this));
  }

  /** Takes body bytes from the start of `buf`; returns how many it took. */
  feed(buf: Buffer): number {
    const take = Math.min(buf.length, this.head.contentLength - this.received);
    if (take === 0) return 0;
    this.received += take;
    if (this.abandoned) return take;
    const part = take === buf.length ? buf : buf.subarray(0, take);
    if (this.received < this.head.contentLength) {
      this.chunks.push(part);
      return take;
    }
    this.body = this.chunks.length === 0 ? part : Buffer.concat([...this.chunks, part], this.received);
    this.chunks = [];
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      waiter.resolve(this.body);
    }
    return take;
  }

  /**
   * The body will not arrive: its time ran out (the handler answers 408, and the connection
   * closes) or the client went away (`timedOut` false: the answer has nowhere to go).
   */
  giveUp(timedOut: boolean): void {
    if (this.complete) return;
    this.abandoned = true;
    const waiter = this.waiter;
    if (waiter === undefined) return;
    this.waiter = undefined;
    waiter.reject(timedOut ? bodyTimedOut(waiter.timeoutMs) : aborted());
  }

  get complete(): boolean {
    return this.received >= this.head.contentLength;
  }
}

/** What a handler waiting for a body gets when its client goes away (node:http's request emits the same). */
function aborted(): Error {
  return Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
}

/** One accepted socket while the lean front serves it. */
class LeanConnection {
  /** Bytes read and not yet served. */
  buf: Buffer = EMPTY;
  current: LeanExchange | undefined;
  /** When the current wait began on the front's clock: idle since, or the head's first bytes since. */
  since: number;
  /** A write did not fit the socket's buffer: no next request is served until it drains. */
  waitingDrain = false;
  paused = false;
  peerEnded = false;
  done = false;
  /** Inside #pump: an answer written meanwhile (a refusal is answered at once) lets the running loop go on, not a nested one. */
  #pumping = false;
  readonly #onData = (chunk: Buffer): void => this.#read(chunk);
  readonly #onEnd = (): void => this.#peerEnd();
  readonly #onClose = (): void => this.#closed();
  readonly #onError = (): void => {
    this.socket.destroy();
  };
  readonly #onDrain = (): void => {
    this.waitingDrain = false;
    this.#pump();
  };

  constructor(
    readonly front: LeanFront,
    readonly socket: Socket,
  ) {
    this.since = front.now;
    socket.setNoDelay(true);
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onClose);
    socket.on('error', this.#onError);
    socket.on('drain', this.#onDrain);
  }

  #read(chunk: Buffer): void {
    if (this.buf.length === 0) {
      this.buf = chunk;
      if (this.current === undefined) this.since = this.front.now;
    } else this.buf = Buffer.concat([this.buf, chunk]);
    this.#pump();
  }

  /**
   * Serves what the buffer holds, request after request, until it needs more bytes, a request is
   * in flight or an answer waits for the socket to drain. Never nested: a client pipelining many
   * requests that are refused at once costs a loop, not a stack.
   */
  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      this.#serveBuffered();
    } finally {
      this.#pumping = false;
    }
    // Reading pauses while the bytes held unserved pass the bound (a client that sends without
    // reading its answers), and resumes once they are served.
    if (!this.done) {
      const over = this.buf.length > MAX_UNSERVED_BYTES;
      if (over !== this.paused) {
        this.paused = over;
        if (over) this.socket.pause();
        else this.socket.resume();
      }
    }
  }

  #serveBuffered(): void {
    while (!this.done) {
      const ex = this.current;
      if (ex !== undefined) {
        if (!ex.complete && this.buf.length > 0) this.#feed(ex);
        if (!ex.complete || !ex.answered) return;
        this.current = undefined;
        this.since = this.front.now;
        // The server closing ends a connection once it is idle; a request already sent gets its 503.
        if ((this.peerEnded || this.front.closing) && this.buf.length === 0) return this.#end();
        continue;
      }
      if (this.buf.length === 0 || this.waitingDrain) return;
      const end = this.buf.indexOf(HEAD_END);
      if (end === -1) {
        if (this.buf.length > LEAN_MAX_HEAD_BYTES + HEAD_END.length) this.#handOff();
        return;
      }
      const head = readLeanHead(this.buf, end);
      if (head === undefined || !this.front.options.serves(head.route.route)) return this.#handOff();
      const next = new LeanExchange(this, head);
      this.buf = this.buf.subarray(end + HEAD_END.length);
      if (this.buf.length > 0 && !next.complete) this.#feed(next);
      this.current = next;
      this.since = this.front.now;
      try {
        this.front.options.serve(next);
      } catch (err) {
        // The fast path answers its own failures; this keeps one it did not from ending the process.
        writeAnswerTo(next, errorAnswer(err));
      }
    }
  }

  #feed(ex: LeanExchange): void {
    const took = ex.feed(this.buf);
    this.buf = took === this.buf.length ? EMPTY : this.buf.subarray(took);
  }

  /** Writes an exchange's answer; the next request is served once it is written and its body has all arrived. */
  answer(ex: LeanExchange, answer: HttpAnswer): void {
    if (ex.answered) return;
    const close = ex.head.close || this.peerEnded || ex.mustClose();
    const wire = leanAnswerBytes(answer, close, this.front.keepAliveSecs);
    ex.answered = true;
    if (this.done || this.socket.destroyed) return;
    if (!this.socket.write(wire.bytes)) this.waitingDrain = true;
    if (wire.close) return this.#end();
    this.#pump();
  }

  /** Gives the socket to node:http with the bytes not yet served; the lean front is done with it. */
  #handOff(): void {
    this.#release();
    const rest = this.buf;
    this.buf = EMPTY;
    // Paused, so that the bytes put back wait for node:http's reader; resumed once it is attached.
    this.socket.pause();
    if (rest.length > 0) this.socket.unshift(rest);
    this.front.handOff(this.socket);
    this.socket.resume();
  }

  #release(): void {
    this.done = true;
    this.socket.off('data', this.#onData);
    this.socket.off('end', this.#onEnd);
    this.socket.off('close', this.#onClose);
    this.socket.off('error', this.#onError);
    this.socket.off('drain', this.#onDrain);
    this.front.forget(this);
  }

  /** Ends the connection once what was written has gone (as node:http's destroySoon). */
  #end(): void {
    if (this.done) return;
    this.#release();
    const socket = this.socket;
    socket.on('error', () => socket.destroy());
    if (socket.writable) socket.end();
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  }

  #peerEnd(): void {
    this.peerEnded = true;
    if (this.current === undefined) this.#end();
    else this.current.giveUp(false);
  }

  #closed(): void {
    const ex = this.current;
    this.#release();
    ex?.giveUp(false);
  }

  /** The front's periodic check of this connection's timeouts. */
  sweep(now: number, front: LeanFront): void {
    const ex = this.current;
    if (ex === undefined) {
      // A timeout of 0 is none, as on node:http.
      if (this.buf.length === 0) {
        if (front.keepAliveMs > 0 && now - this.since >= front.keepAliveMs) this.socket.destroy();
      } else if (front.headersTimeoutMs > 0 && now - this.since >= front.headersTimeoutMs) this.#requestTimeout();
      return;
    }
    if (ex.waiter !== undefined && now >= ex.waiter.deadline) ex.giveUp(true);
    else if (ex.waiter === undefined && !ex.complete && now - this.since >= front.requestTimeoutMs)
      this.socket.destroy();
  }

  /** A head that did not arrive in time: node:http's 408 for it, and the connection closed. */
  #requestTimeout(): void {
    const body = '{"ok":false,"error":"request timeout"}';
    this.#release();
    this.socket.end(
      `HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
    );
    this.socket.once('finish', () => this.socket.destroy());
  }

  /** Closes the connection if no request of it is in flight or partly read (the server closes). */
  closeIfIdle(): void {
    if (this.current === undefined && this.buf.length === 0) this.socket.destroy();
  }
}

/** The front of one HTTP server: its lean connections and their clock. */
export class LeanFront {
  readonly #connections = new Set<LeanConnection>();
  #sweeper: NodeJS.Timeout | undefined;
  /** The front's clock (ms), advanced by the sweep: timeouts are measured on it, no clock read per request. */
  now = performance.now();
  closing = false;

  constructor(
    readonly options: LeanFrontOptions,
    readonly server: Server,
    readonly handOff: (socket: Socket) => void,
  ) {}

  get keepAliveMs(): number {
    return this.server.keepAliveTimeout;
  }
  get keepAliveSecs(): number {
    return Math.floor(this.server.keepAliveTimeout / 1000);
  }
  get headersTimeoutMs(): number {
    return this.server.headersTimeout;
  }
  get requestTimeoutMs(): number {
    return this.server.requestTimeout > 0 ? this.server.requestTimeout : 300_000;
  }

  accept(socket: Socket): void {
    if (this.closing) return this.handOff(socket);
    this.now = performance.now();
    this.#connections.add(new LeanConnection(this, socket));
    this.#sweeper ??= setInterval(() => this.#sweep(), SWEEP_MS).unref();
  }

  forget(connection: LeanConnection): void {
    this.#connections.delete(connection);
    if (this.#connections.size === 0 && this.#sweeper !== undefined) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }

  #sweep(): void {
    const now = (this.now = performance.now());
    for (const c of this.#connections) c.sweep(now, this);
  }

  /** Bytes read and not yet served, over every connection (bounded per connection: MAX_UNSERVED_BYTES and one read). */
  unservedBytes(): number {
    let bytes = 0;
    for (const c of this.#connections) bytes += c.buf.length;
    return bytes;
  }

  /**
   * The server is closing: idle connections end now, the others once they are idle. A request
   * already read or arriving meanwhile gets the fast path's shutdown answer, which closes.
   */
  close(): void {
    this.closing = true;
    for (const c of this.#connections) c.closeIfIdle();
  }
}

/**
 * Puts the lean front ahead of node:http on `server`: every accepted connection is the front's
 * until its first request the front leaves to node:http.
 */
export function installLeanFront(server: Server, options: LeanFrontOptions): LeanFront {
  const nodeListeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const front = new LeanFront(options, server, (socket) => {
    for (const listener of nodeListeners) listener.call(server, socket);
  });
  server.on('connection', (socket: Socket) => front.accept(socket));
  return front;
}
