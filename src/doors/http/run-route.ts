/** POST /flows/{tenant}/{name}/run: the synchronous door (JSON, XML and SOAP 1.1/1.2 in and out). */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { FlowError, SvcError } from '../../common/errors.js';
import { parseXmlValue } from '../../common/xml.js';
import type { FlowRunner } from '../../app/flow-runner.js';
import { buildHeaders, encodeOutput, type FlowResult } from '../../engine/index.js';
import type { Gate } from '../../gate/gate.js';
import { readSoapRequest, type SoapRequest } from '../soap/request.js';
import { buildSoapAnswer, faultFromContext, type SoapAnswer } from '../soap/response.js';
import { readBody } from './body.js';
import { checkSignature, correlationIdOf, gateHook, mediaType, parseJsonBody, type FlowParams } from './inbound.js';
import { sendError } from './reply-error.js';

export interface RunRouteDeps {
  gate: Gate | undefined;
  secret: string | undefined;
  runner: FlowRunner;
}

const SOAP_MEDIA = /text\/xml|application\/soap\+xml/;

export function runRoutes(deps: RunRouteDeps) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.post<{ Params: FlowParams }>('/flows/:tenant/:name/run', { onRequest: gateHook(deps.gate, 'run') }, async (req, reply) => {
      let soap: SoapRequest | undefined;
      try {
        const flow = deps.runner.resolve(req.params.tenant, req.params.name);
        const body = await readBody(req.raw, deps.runner.ceiling(flow));
        checkSignature(deps.secret, body, req);
        const contentType = req.headers['content-type'] ?? '';
        let input: unknown;
        if (SOAP_MEDIA.test(contentType.toLowerCase())) {
          const action = req.headers.soapaction;
          soap = readSoapRequest(contentType, typeof action === 'string' ? action : undefined, body);
          input = soap === undefined ? parseXmlValue(body.toString('utf8')) : soap.body;
        } else if (mediaType(req) === 'application/xml') {
          input = parseXmlValue(body.toString('utf8'));
        } else {
          input = parseJsonBody(body);
        }
        const result = await deps.runner.run(flow, input, {
          correlationId: correlationIdOf(req),
          headers: buildHeaders(req.raw.rawHeaders),
          soap: soap === undefined ? undefined : { action: soap.action, version: soap.version },
        });
        return soap === undefined ? sendResult(reply, result) : sendSoapResult(reply, soap, result);
      } catch (err) {
        return soap === undefined && !(err instanceof SvcError && err.code === 'SVC_ERR_SOAP_MALFORMED') ? sendError(reply, err) : sendSoapError(reply, soap, err);
      }
    });
  };
}

function sendResult(reply: FastifyReply, result: FlowResult): FastifyReply {
  const encoded = encodeOutput(result.output);
  reply.code(result.status).headers(result.headers);
  if (encoded.contentType === undefined) return reply.send();
  // A Buffer keeps the content type exactly as the spec names it: Fastify appends `; charset=utf-8`
  // to a JSON type sent as a string.
  const body = typeof encoded.body === 'string' ? Buffer.from(encoded.body) : encoded.body;
  return reply.header('content-type', encoded.contentType).send(body);
}

function sendSoap(reply: FastifyReply, status: number, answer: SoapAnswer): FastifyReply {
  return reply.code(status).headers(answer.headers).type(answer.contentType).send(answer.body);
}

/** A SOAP answer; a handled fault is still a Fault envelope, with the fault section's status honoured. */
function sendSoapResult(reply: FastifyReply, soap: SoapRequest, result: FlowResult): FastifyReply {
  if (result.faultHandled && result.handledError !== undefined) {
    const handled = result.handledError;
    const ctx = { soap_fault_code: result.soapFault?.code, soap_fault_string: result.soapFault?.string };
    // The handler's output is the fault's detail; its response_status wins on both versions.
    const fault = faultFromContext(soap.version, { status: handled.status, message: publicMessage(handled) }, ctx, { responseStatus: result.faultResponseStatus, detail: result.output });
    return sendSoap(reply, fault.status, fault);
  }
  reply.headers(result.headers);
  return sendSoap(reply, result.status, buildSoapAnswer(soap.version, result.output));
}

/** Errors of a SOAP request are SOAP Faults; `response_header_<name>` never reaches a fault. */
function sendSoapError(reply: FastifyReply, soap: SoapRequest | undefined, err: unknown): FastifyReply {
  if (!(err instanceof SvcError)) return sendError(reply, err);
  const version = soap?.version ?? (err as { soapVersion?: '1.1' | '1.2' }).soapVersion ?? '1.1';
  const soapFault = err instanceof FlowError ? err.soapFault : undefined;
  const ctx = { soap_fault_code: soapFault?.code, soap_fault_string: soapFault?.string };
  const fault = faultFromContext(version, { status: err.status, message: publicMessage(err) }, ctx, {
    malformedEnvelope: err.code === 'SVC_ERR_SOAP_MALFORMED',
  });
  // The service's own headers (Retry-After on 503) still apply; the flow's never do.
  if (err.headers !== undefined) reply.headers(err.headers);
  return sendSoap(reply, fault.status, fault);
}

function publicMessage(err: SvcError): string {
  return err.status === 500 && err.code === 'SVC_ERR_INTEGRITY' ? 'internal error' : err.message;
}

