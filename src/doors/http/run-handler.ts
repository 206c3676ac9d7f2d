/**
 * POST /flows/{tenant}/{name}/run after the gate, as a door call the executor serves (it resolves,
 * reads under the ceiling, records a rejection, runs): the door's part is the signature, parsing
 * (JSON, XML, SOAP 1.1/1.2) and the answer as plain data (framework-free: the node:http fast path
 * writes it).
 */
import { FlowError, publicMessage, SoapEnvelopeError, SvcError } from '../../common/errors.js';
import type { IncomingTraceContext } from '../../common/trace-context/spans.js';
import { parseXmlValue } from '../../common/xml.js';
import type { DoorCall } from '../../app/runtime/door-call.js';
import type { FlowExecutor } from '../../app/runtime/flow-executor.js';
import { buildHeaders, encodeOutput, flowReadsHeaders, type FlowResult, type LoadedFlow } from '../../engine/index.js';
import { readSoapRequest, type SoapRequest } from '../soap/request.js';
import { buildSoapAnswer, faultFromContext, type SoapAnswer } from '../soap/response.js';
import { errorAnswer, type HttpAnswer } from './answer.js';
import type { FlowRouteHandler } from './fast-path.js';
import type { HotRequest } from './hot-request.js';
import {
  checkSignature,
  correlationIdOf,
  mediaType,
  parseJsonBody,
  traceContextOf,
  type InboundRequest,
} from './inbound.js';

export interface RunHandlerDeps {
  secret: string | undefined;
  executor: FlowExecutor;
  /** `request_body_timeout_secs`, in milliseconds. @default DEFAULT_BODY_TIMEOUT_MS */
  bodyTimeoutMs?: number;
}

const SOAP_MEDIA = /text\/xml|application\/soap\+xml/i;
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** The door's side of /run: each request becomes one RunCall, which the executor serves. */
export function createRunHandler(deps: RunHandlerDeps): FlowRouteHandler {
  return (raw, tenant, name, admitted) => deps.executor.serve(new HttpRunCall(deps, raw, tenant, name, admitted));
}

/**
 * One /run request as the executor sees it (DoorCall), and the run's meta: `door`, `headers` and
 * `soap` are known once the body is parsed. A class, so every request's object has one shape.
 * What reads the body is the subclass's: a node:http request's stream here, an example's bytes in
 * `svc test` (which answers through the same parsing and the same answers).
 */
export abstract class RunCall implements DoorCall<Buffer, HttpAnswer> {
  readonly correlationId: string;
  readonly traceContext: IncomingTraceContext | undefined;
  readonly recordsRejection = true;
  door: 'http' | 'soap' = 'http';
  headers: Record<string, string> = NO_HEADERS;
  /** `ctx.soap_action` / `ctx.soap_version`. */
  soap: { readonly action?: string; readonly version?: string } | undefined = undefined;
  /** The parsed envelope of a SOAP request: its answer and its errors are SOAP. */
  envelope: SoapRequest | undefined = undefined;

  constructor(
    readonly deps: RunHandlerDeps,
    readonly raw: InboundRequest,
    readonly tenant: string,
    readonly flow: string,
    readonly admitted: LoadedFlow | undefined,
  ) {
    this.correlationId = correlationIdOf(raw);
    this.traceContext = traceContextOf(raw);
  }

  /** The body, refused (413) past `ceilingBytes`. */
  abstract read(ceilingBytes: number): Buffer | Promise<Buffer>;

  input(flow: LoadedFlow, body: Buffer): unknown {
    const raw = this.raw;
    checkSignature(this.deps.secret, body, raw);
    const contentType = raw.headers['content-type'] ?? '';
    let input: unknown;
    if (SOAP_MEDIA.test(contentType)) {
      const action = raw.headers.soapaction;
      const soap = readSoapRequest(contentType, typeof action === 'string' ? action : undefined, body);
      if (soap === undefined) input = parseXmlValue(body.toString('utf8'));
      else {
        this.envelope = soap;
        this.door = 'soap';
        this.soap = { action: soap.action, version: soap.version };
        input = soap.body;
      }
    } else if (mediaType(raw) === 'application/xml') {
      input = parseXmlValue(body.toString('utf8'));
    } else {
      input = parseJsonBody(body);
    }
    // Built only for a flow that can read them (most never do).
    if (flowReadsHeaders(flow.ir)) this.headers = buildHeaders(raw.rawHeaders);
    return input;
  }

  answer(result: FlowResult): HttpAnswer {
    return this.envelope === undefined ? resultAnswer(result) : soapResultAnswer(this.envelope, result);
  }

  fail(err: unknown): HttpAnswer {
    const malformedSoap = err instanceof SvcError && err.code === 'SVC_ERR_SOAP_MALFORMED';
    return this.envelope === undefined && !malformedSoap ? errorAnswer(err) : soapErrorAnswer(this.envelope, err);
  }
}

/** A /run request over HTTP: its body is read from the connection under the ceiling and the body timeout. */
class HttpRunCall extends RunCall {
  constructor(
    deps: RunHandlerDeps,
    readonly request: HotRequest,
    tenant: string,
    flow: string,
    admitted: LoadedFlow | undefined,
  ) {
    super(deps, request, tenant, flow, admitted);
  }

  read(ceilingBytes: number): Buffer | Promise<Buffer> {
    return this.request.readBody(ceilingBytes, this.deps.bodyTimeoutMs);
  }
}

function resultAnswer(result: FlowResult): HttpAnswer {
  const encoded = encodeOutput(result.output);
  if (encoded.contentType === undefined) return { status: result.status, headers: result.headers };
  return {
    status: result.status,
    headers: { ...result.headers, 'content-type': encoded.contentType },
    body: encoded.body,
  };
}

function soapAnswer(status: number, answer: SoapAnswer, extra: Record<string, string> = {}): HttpAnswer {
  return { status, headers: { ...extra, ...answer.headers, 'content-type': answer.contentType }, body: answer.body };
}

/** A SOAP answer; a handled fault is still a Fault envelope, with the fault section's status honoured. */
function soapResultAnswer(soap: SoapRequest, result: FlowResult): HttpAnswer {
  if (result.faultHandled && result.handledError !== undefined) {
    const handled = result.handledError;
    const ctx = { soap_fault_code: result.soapFault?.code, soap_fault_string: result.soapFault?.string };
    // The handler's output is the fault's detail; its response_status wins on both versions.
    const fault = faultFromContext(soap.version, { status: handled.status, message: publicMessage(handled) }, ctx, {
      responseStatus: result.faultResponseStatus,
      detail: result.output,
    });
    return soapAnswer(fault.status, fault);
  }
  return soapAnswer(result.status, buildSoapAnswer(soap.version, result.output), result.headers);
}

/** Errors of a SOAP request are SOAP Faults; `response_header_<name>` never reaches a fault. */
function soapErrorAnswer(soap: SoapRequest | undefined, err: unknown): HttpAnswer {
  if (!(err instanceof SvcError)) return errorAnswer(err);
  const version = soap?.version ?? (err instanceof SoapEnvelopeError ? err.soapVersion : undefined) ?? '1.1';
  const soapFault = err instanceof FlowError ? err.soapFault : undefined;
  const ctx = { soap_fault_code: soapFault?.code, soap_fault_string: soapFault?.string };
  const fault = faultFromContext(version, { status: err.status, message: publicMessage(err) }, ctx, {
    malformedEnvelope: err.code === 'SVC_ERR_SOAP_MALFORMED',
  });
  // The service's own headers (Retry-After on 503) still apply; the flow's never do.
  return soapAnswer(fault.status, fault, err.headers ?? {});
}
