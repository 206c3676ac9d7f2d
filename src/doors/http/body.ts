/** Reads a request body under a per-request ceiling, refusing a declared or streamed excess with 413. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError } from '../../common/errors.js';

export const PAYLOAD_TOO_LARGE = 'payload reached size limit';

export function payloadTooLarge(): SvcError {
  return new SvcError('SVC_ERR_PAYLOAD_TOO_LARGE', PAYLOAD_TOO_LARGE);
}

/**
 * Requests whose body a route began to read and gave up on (too slow, over the ceiling, failed):
 * the rest of it may still be on its way, so the connection cannot carry another request. Whoever
 * answers such a request sends `Connection: close`, and Node ends the socket once the answer is
 * written (`writeAnswer` for the fast path, the Fastify app's `onSend` hook for the rest).
 */
const abandonedBodies = new WeakSet<IncomingMessage>();

/**
 * True when the answer about to be written must close the connection because of the request's
 * body: a route gave up reading it (abandonedBodies), or no route read it and it has not all arrived
 * while unbounded or large (refusalMustClose: Node would otherwise read and discard the rest before
 * the next request, under no limit of ours). Checked by both writers: `writeAnswer` (the fast path)
 * and the Fastify app's `onSend` hook (every other route, the UI's included).
 */
export function answerMustClose(raw: IncomingMessage | undefined): boolean {
  if (raw === undefined) return false;
  return abandonedBodies.has(raw) || (!raw.complete && refusalMustClose(raw));
}

/** Refuses a declared Content-Length over `limitBytes` without reading a byte. */
export function checkDeclaredLength(raw: IncomingMessage, limitBytes: number): void {
  const declared = raw.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) {
    abandonedBodies.add(raw);
    throw payloadTooLarge();
  }
}

/**
 * Requests that sent `Expect: 100-continue`, with the response that owes the interim answer. The
 * server does not send `100 Continue` on arrival (see server.ts): only once a route decides to read
 * the body, so a refused caller (gate, 404, declared length over the cap) is never invited to send it.
 */
export const awaitingContinue = new WeakMap<IncomingMessage, ServerResponse>();

/**
 * The largest announced body a refusal made before reading it lets Node read and discard so the
 * connection stays open, in bytes. A new TCP connection per refused request cost about 4x a /run's
 * CPU (bench:scale keys: 330 against 87 µs); reading 16 KiB is far less, and bounded.
 */
export const REFUSED_BODY_DISCARD_MAX_BYTES = 16 * 1024;

/**
 * True when a refusal made before reading the body must close the connection: a chunked body (no
 * bound), one announced above REFUSED_BODY_DISCARD_MAX_BYTES, an unreadable length, or an
 * `Expect: 100-continue` (the body would follow only an invitation that never comes).
 */
export function refusalMustClose(raw: Pick<IncomingMessage, 'headers'>): boolean {
  if (raw.headers['transfer-encoding'] !== undefined || raw.headers.expect !== undefined) return true;
  const length = raw.headers['content-length'];
  if (length === undefined) return false;
  return !/^\d{1,9}$/.test(length) || Number(length) > REFUSED_BODY_DISCARD_MAX_BYTES;
}

/**
 * The 408 for a body that did not arrive in time. Its connection is closed because readBody marks
 * the request (abandonedBodies, answerMustClose), not by a header on the error: a route that answers it otherwise (the
 * connector's 400) must close the connection too.
 */
export function bodyTimedOut(timeoutMs: number): SvcError {
  return new SvcError(
    'SVC_ERR_REQUEST_TIMEOUT',
    `the request body did not arrive within ${Math.round(timeoutMs / 1000)} s`,
  );
}

/** Default of `readBody`'s time limit when the caller gives none (the setting's default). Milliseconds. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

/**
 * Reads whose time limit is not armed yet, each with its deadline's arming function. A body
 * almost always arrives in the same packets as its headers and has ended before this event-loop
 * turn does; its read then never needs a timer. So the timer is armed at the end of the turn, for
 * the reads still waiting then, with what is left of their limit (measured: a timer set and cleared
 * per request was 2 to 3% of /run's main thread).
 */
let unarmed: (() => void)[] = [];

function armUnarmed(): void {
  const list = unarmed;
  unarmed = [];
  for (const arm of list) arm();
}

/**
 * Buffers the body; stops reading and throws 413 as soon as it passes `limitBytes`, 408 when the
 * whole body has not arrived `timeoutMs` after reading began (a slow client holds a connection no
 * longer). Every way of giving up marks the request (abandonedBodies), so its answer closes the connection.
 */
export function readBody(
  raw: IncomingMessage,
  limitBytes: number,
  timeoutMs: number = DEFAULT_BODY_TIMEOUT_MS,
): Promise<Buffer> {
  checkDeclaredLength(raw, limitBytes);
  const interim = awaitingContinue.get(raw);
  if (interim !== undefined) {
    awaitingContinue.delete(raw);
    interim.writeContinue();
  }
  const began = performance.now();
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        abandon();
        raw.resume(); // drain the rest so the socket can answer
        reject(payloadTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    // On end the listeners stay: they go with the request, and a late 'error' still has one.
    const onEnd = () => {
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      abandon();
      reject(err);
    };
    const abandon = () => {
      settled = true;
      abandonedBodies.add(raw);
      if (timer !== undefined) clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onError);
    };
    const arm = () => {
      if (settled) return;
      timer = setTimeout(
        () => {
          abandon();
          reject(bodyTimedOut(timeoutMs));
        },
        Math.max(0, timeoutMs - (performance.now() - began)),
      );
      timer.unref();
    };
    if (unarmed.length === 0) setImmediate(armUnarmed);
    unarmed.push(arm);
    raw.on('data', onData);
    raw.on('end', onEnd);
    raw.on('error', onError);
  });
}
