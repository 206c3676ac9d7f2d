/**
 * POST /flows/{tenant}/{name}/run after the gate: resolve, read under the ceiling, signature,
 * parse (JSON, XML, SOAP 1.1/1.2), run through the executor, and the answer as plain data
 * (framework-free: the node:http fast path writes it).
 */
import { FlowError, publicMessage, SvcError } from '../../common/errors.js';
import { parseXmlValue } from '../../common/xml.js';
import type { FlowExecutor } from '../../app/runtime/flow-executor.js';
import { buildHeaders, encodeOutput, flowReadsHeaders, type FlowResult } from '../../engine/index.js';
import { readSoapRequest, type SoapRequest } from '../soap/request.js';
import { buildSoapAnswer, faultFromContext, type SoapAnswer } from '../soap/response.js';
import { errorAnswer, type HttpAnswer } from './answer.js';
import { readBody } from './body.js';
import type { FlowRouteHandler } from './fast-path.js';
import { checkSignature, correlationIdOf, mediaType, parseJsonBody, traceContextOf } from './inbound.js';

export interface RunHandlerDeps {
  secret: string | undefined;
  executor: FlowExecutor;
  /** `request_body_timeout_secs`, in milliseconds. @default DEFAULT_BODY_TIMEOUT_MS */
  bodyTimeoutMs?: number;
}

const SOAP_MEDIA = /text\/xml|application\/soap\+xml/i;
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export function createRunHandler(deps: RunHandlerDeps): FlowRouteHandler {
  return async (raw, tenant, name) => {
    let soap: SoapRequest | undefined;
    let started = false;
    const correlationId = correlationIdOf(raw);
    const traceContext = traceContextOf(raw);
    try {
      const flow = deps.executor.resolve(tenant, name);
      const body = await readBody(raw, deps.executor.ceiling(flow), deps.bodyTimeoutMs);
      checkSignature(deps.secret, body, raw);
      const contentType = raw.headers['content-type'] ?? '';
      let input: unknown;
      if (SOAP_MEDIA.test(contentType)) {
        const action = raw.headers.soapaction;
        soap = readSoapRequest(contentType, typeof action === 'string' ? action : undefined, body);
        input = soap === undefined ? parseXmlValue(body.toString('utf8')) : soap.body;
      } else if (mediaType(raw) === 'application/xml') {
        input = parseXmlValue(body.toString('utf8'));
      } else {
        input = parseJsonBody(body);
      }
      started = true; // from here the executor records the delivery itself
      const result = await deps.executor.run(flow, input, {
        door: soap === undefined ? 'http' : 'soap',
        correlationId,
        // Built only for a flow that can read them (most never do).
        headers: flowReadsHeaders(flow.ir) ? buildHeaders(raw.rawHeaders) : NO_HEADERS,
        soap: soap === undefined ? undefined : { action: soap.action, version: soap.version },
        traceContext,
      });
      return soap === undefined ? resultAnswer(result) : soapResultAnswer(soap, result);
    } catch (err) {
      if (!started) deps.executor.recordRejected(tenant, name, correlationId, err, traceContext);
      const malformedSoap = err instanceof SvcError && err.code === 'SVC_ERR_SOAP_MALFORMED';
      return soap === undefined && !malformedSoap ? errorAnswer(err) : soapErrorAnswer(soap, err);
    }
  };
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
  const version = soap?.version ?? (err as { soapVersion?: '1.1' | '1.2' }).soapVersion ?? '1.1';
  const soapFault = err instanceof FlowError ? err.soapFault : undefined;
  const ctx = { soap_fault_code: soapFault?.code, soap_fault_string: soapFault?.string };
  const fault = faultFromContext(version, { status: err.status, message: publicMessage(err) }, ctx, {
    malformedEnvelope: err.code === 'SVC_ERR_SOAP_MALFORMED',
  });
  // The service's own headers (Retry-After on 503) still apply; the flow's never do.
  return soapAnswer(fault.status, fault, err.headers ?? {});
}
