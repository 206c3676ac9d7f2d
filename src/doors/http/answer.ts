/** An HTTP answer as plain data, written either through Fastify or straight to a node:http response. */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { answerMustClose } from './body.js';
import { toWireError } from './reply-error.js';

export interface HttpAnswer {
  readonly status: number;
  /** Lowercase names; `content-type` is set exactly as given (no charset is added). */
  readonly headers: Record<string, string>;
  /** Absent: an empty body. */
  readonly body?: string | Buffer;
}

export function errorAnswer(err: unknown): HttpAnswer {
  const wire = toWireError(err);
  return { status: wire.status, headers: { ...wire.headers, 'content-type': wire.contentType }, body: wire.body };
}

/** Writes the answer in one go (headers and body in a single write where Node can). */
export function writeAnswer(res: ServerResponse, answer: HttpAnswer): void {
  // A flat name/value list: no copy of the headers object per response. The length is ours.
  const list: (string | number)[] = [];
  for (const name in answer.headers) if (name !== 'content-length') list.push(name, answer.headers[name]!);
  // A body given up on, or left unread, may still be arriving: this connection carries no other request.
  if (answer.headers.connection === undefined && answerMustClose(res.req)) list.push('connection', 'close');
  const body = answer.body;
  if (body !== undefined) list.push('content-length', typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  else if (answer.status !== 204 && answer.status !== 304) list.push('content-length', 0);
  res.writeHead(answer.status, list as unknown as string[]);
  res.end(body);
}

/** Answers waiting for the end of this event-loop turn, as (response, answer) pairs. */
let held: (ServerResponse | HttpAnswer)[] = [];

function writeHeld(): void {
  const list = held;
  held = [];
  for (let i = 0; i < list.length; i += 2) {
    const res = list[i] as ServerResponse;
    try {
      writeAnswer(res, list[i + 1] as HttpAnswer);
    } catch (err) {
      // One answer Node refuses (a header value it rejects) must not cost the others theirs.
      if (res.headersSent) res.destroy();
      else writeAnswer(res, errorAnswer(err));
    }
  }
}

/**
 * Writes the answer at the end of this event-loop turn, together with every other answer that
 * became ready in it. Measured under load: writes spread through the turn each woke the idle
 * client on the other core, and on a virtual machine that wake-up (an inter-processor interrupt)
 * made each socket write cost about twice what it costs when the writes go out back to back.
 */
export function writeAnswerAtTurnEnd(res: ServerResponse, answer: HttpAnswer): void {
  if (held.length === 0) setImmediate(writeHeld);
  held.push(res, answer);
}

export function sendAnswer(reply: FastifyReply, answer: HttpAnswer): FastifyReply {
  reply.code(answer.status).headers(answer.headers);
  if (answer.body === undefined) return reply.send();
  // A Buffer keeps the content type exact: Fastify appends a charset to a JSON type sent as a string.
  return reply.send(typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body);
}
