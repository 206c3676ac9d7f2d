/** What a gate refusal leaves behind: `access_denied` in the event log, `access.denied` on the key's tenant chain. */
import type { AuditAppender } from '../store/audit-thread.js';
import type { EventEmitter } from '../store/event-sink.js';
import type { GateRefusal, GateSinks } from './gate.js';

/**
 * Every refusal gets its log row; a policy verdict on a found key (not a 503, which says nothing of
 * the caller) is also audited on that key's tenant chain.
 */
export function refusalRecords(events: EventEmitter, audit: AuditAppender): GateSinks {
  return {
    refused: (r: GateRefusal) => {
      events.emit({ event: 'access_denied', correlation_id: r.correlationId, tenant: r.tenant, flow: r.flow, http_status: r.status, reason: r.reason });
      if (r.subjectTenant !== undefined && r.status !== 503) {
        audit.append({
          tenant: r.subjectTenant,
          eventType: 'access.denied',
          correlationId: r.correlationId,
          payload: { flow: `${r.tenant}/${r.flow}`, status: r.status, key_id: r.keyId, reason: r.reason },
        });
      }
    },
  };
}
