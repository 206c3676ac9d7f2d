/** GET /flows/:tenant/:name/wsdl: the generated WSDL 1.1; public, but only for a registered, enabled tenant. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { flowNotFound, invalidFlowIdentifier, SvcError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { isValidName } from '../../common/names.js';
import { buildWsdl } from '../soap/wsdl.js';
import { sendError } from './reply-error.js';

export interface WsdlRouteDeps {
  /** True for a registered, enabled tenant. May throw on storage failure (-> 500). */
  tenantActive(tenant: string): boolean;
  /** The latest artifact's SOAP keys, or undefined when no flow or no SOAP configuration. May throw (-> 500). */
  loadSoapConfig(tenant: string, flow: string): { operation: string; namespace: string } | undefined;
}

/** Scheme as the client saw it: a proxy's X-Forwarded-Proto first (TLS ends in front of us), else the socket's. */
function schemeOf(req: FastifyRequest): string {
  const forwarded = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase();
  if (first === 'http' || first === 'https') return first;
  return req.protocol;
}

export function wsdlRoutes(deps: WsdlRouteDeps, log: Pick<Logger, 'error'>) {
  return async function wsdlPlugin(app: FastifyInstance): Promise<void> {
    app.get<{ Params: { tenant: string; name: string } }>('/flows/:tenant/:name/wsdl', async (req, reply) => {
      const { tenant, name } = req.params;
      if (!isValidName(tenant) || !isValidName(name)) return sendError(reply, invalidFlowIdentifier());
      let soap: { operation: string; namespace: string } | undefined;
      try {
        // The tenant check runs here (not in the gate) so it applies under --no-auth too.
        soap = deps.tenantActive(tenant) ? deps.loadSoapConfig(tenant, name) : undefined;
      } catch (err) {
        log.error({ err, tenant, flow: name }, 'wsdl: the registry could not be read; answered 500');
        return sendError(reply, new SvcError('SVC_ERR_INTERNAL', 'internal error', { cause: err }));
      }
      if (soap === undefined) return sendError(reply, flowNotFound(tenant, name));
      const host = req.headers.host ?? req.hostname;
      const wsdl = buildWsdl({
        tenant,
        flow: name,
        operation: soap.operation,
        namespace: soap.namespace,
        scheme: schemeOf(req),
        host,
      });
      return reply.code(200).type('text/xml; charset=utf-8').send(wsdl);
    });
  };
}
