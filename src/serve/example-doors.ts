/**
 * The HTTP door's translation for `svc test` (app/testing/run-example.ts): an example's request
 * goes through /run's own parsing (JSON, XML, SOAP 1.1/1.2, the signature rule, `ctx.headers`) and
 * comes back as /run would answer it (error bodies, SOAP envelopes and Faults), with no socket;
 * a queue example's body is stored as /enqueue stores it. Composed here, as app/ imports no door.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ExampleDoors, ExampleRequest } from '../app/testing/run-example.js';
import type { FlowExecutor } from '../app/runtime/flow-executor.js';
import type { FlowResult, LoadedFlow } from '../engine/index.js';
import type { HttpAnswer } from '../doors/http/answer.js';
import { payloadTooLarge } from '../doors/http/body.js';
import { enqueuedPayload } from '../doors/http/enqueue-handler.js';
import type { InboundRequest } from '../doors/http/inbound.js';
import { RunCall } from '../doors/http/run-handler.js';

/** One example's /run request: its body is the example's bytes, refused past the ceiling as a socket's would be. */
class ExampleRunCall extends RunCall {
  result: FlowResult | undefined;
  error: unknown;

  constructor(
    executor: FlowExecutor,
    request: InboundRequest,
    readonly body: Buffer,
    flow: LoadedFlow,
  ) {
    super({ secret: undefined, executor }, request, flow.ir.tenant, flow.ir.flow, flow);
  }

  read(ceilingBytes: number): Buffer {
    if (this.body.length > ceilingBytes) throw payloadTooLarge();
    return this.body;
  }

  override answer(result: FlowResult): HttpAnswer {
    this.result = result;
    return super.answer(result);
  }

  override fail(err: unknown): HttpAnswer {
    this.error = err;
    return super.fail(err);
  }
}

function inbound(request: ExampleRequest): InboundRequest {
  const headers: IncomingHttpHeaders = {};
  const rawHeaders: string[] = [];
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name.toLowerCase()] = value;
    rawHeaders.push(name, value);
  }
  return { headers, rawHeaders };
}

export const EXAMPLE_DOORS: ExampleDoors = Object.freeze({
  async serveRun(executor: FlowExecutor, flow: LoadedFlow, request: ExampleRequest) {
    const call = new ExampleRunCall(executor, inbound(request), request.body, flow);
    const answer = await executor.serve(call);
    return { answer, result: call.result, error: call.error };
  },
  enqueuedPayload(request: ExampleRequest): unknown {
    return enqueuedPayload(inbound(request), request.body);
  },
});
