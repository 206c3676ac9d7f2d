/** An HTTP answer as plain data, written through Fastify, straight to a node:http response, or by the lean front. */
import { ServerResponse } from 'node:http';
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

/** Where an answer goes when it is not a node:http response: a request of the lean front (lean-front.ts). */
export interface AnswerSink {
  /** Writes the answer; throws, having written nothing, for one node:http would refuse (a header value). */
  deliver(answer: HttpAnswer): void;
}

/** A hot route's answer goes to either. */
export type AnswerTarget = ServerResponse | AnswerSink;

/** Writes the answer now to either kind of target; an answer refused as written becomes the error's answer. */
export function writeAnswerTo(target: AnswerTarget, answer: HttpAnswer): void {
  if (target instanceof ServerResponse) {
    try {
      writeAnswer(target, answer);
    } catch (err) {
      if (target.headersSent) target.destroy();
      else writeAnswer(target, errorAnswer(err));
    }
    return;
  }
  try {
    target.deliver(answer);
  } catch (err) {
    target.deliver(errorAnswer(err));
  }
}

/** Answers waiting for the end of this event-loop turn, as (target, answer) pairs. */
let held: (AnswerTarget | HttpAnswer)[] = [];

function writeHeld(): void {
  const list = held;
  held = [];
  // One answer refused as written (a header value) costs only its own request its answer.
  for (let i = 0; i < list.length; i += 2) writeAnswerTo(list[i] as AnswerTarget, list[i + 1] as HttpAnswer);
}

/**
 * Writes the answer at the end of this event-loop turn, together with every other answer that
 * became ready in it. Measured under load: writes spread through the turn each woke the idle
 * client on the other core, and on a virtual machine that wake-up (an inter-processor interrupt)
 * made each socket write cost about twice what it costs when the writes go out back to back.
 */
export function writeAnswerAtTurnEnd(target: AnswerTarget, answer: HttpAnswer): void {
  if (held.length === 0) setImmediate(writeHeld);
  held.push(target, answer);
}

export function sendAnswer(reply: FastifyReply, answer: HttpAnswer): FastifyReply {
  reply.code(answer.status).headers(answer.headers);
  if (answer.body === undefined) return reply.send();
  // A Buffer keeps the content type exact: Fastify appends a charset to a JSON type sent as a string.
  return reply.send(typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body);
}
