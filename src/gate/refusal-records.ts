/**
 * What a gate refusal leaves behind: `access_denied` in the event log, `access.denied` on the key's
 * tenant chain; with repeats folded so that refusals cost a bounded number of records whatever
 * their rate (a refused caller is not slowed by the rate limit: the 429 is itself a refusal).
 */
import { isoMillis } from '../common/clock.js';
import type { AuditAppender } from '../store/audit/audit-thread.js';
import type { EventEmitter } from '../store/event-log/event-sink.js';
import type { GateRefusal, GateSinks } from './gate.js';
import { RepeatFolder, type FoldedRepeats } from './repeat-folder.js';

/** Kinds of refusal tracked per window before new ones fold into one per status and key. */
const MAX_REFUSAL_KINDS = 1024;

/** The reason of a summary that folds refusals of many kinds (past MAX_REFUSAL_KINDS in a window). */
export const MANY_KINDS_REASON = `refusals of more than ${MAX_REFUSAL_KINDS} kinds in one window (tenant, flow and reason varied)`;

export interface RefusalRecords extends GateSinks {
  /** Closes the window (every 10 s in service): writes one summary per kind of refusal that repeated in it. */
  closeWindow(): void;
}

/**
 * Every refusal is recorded, as the spec requires: the first five of a kind in a window each by
 * its own log row (and, for a policy verdict on a found key, not a 503, which says nothing of the
 * caller, its own audit entry on that key's tenant chain), exactly as before; further repeats of
 * the same kind (same status, key, tenant, flow and reason) in the window by one summary row and
 * entry when the window closes, carrying `repeats`, `first_at` and `last_at` in the payload.
 */
export function refusalRecords(
  events: EventEmitter,
  audit: AuditAppender,
  nowMs: () => number = Date.now,
): RefusalRecords {
  const folder = new RepeatFolder<GateRefusal>({ maxKinds: MAX_REFUSAL_KINDS });
  return {
    refused: (r: GateRefusal) => {
      const verdict = folder.note(kindOf(r), r, nowMs(), () => {
        const coarse: GateRefusal = {
          status: r.status,
          reason: MANY_KINDS_REASON,
          tenant: '',
          flow: '',
          subjectTenant: r.subjectTenant,
          keyId: r.keyId,
        };
        return { kind: `many\u0000${kindOf(coarse)}`, record: coarse };
      });
      if (verdict === 'folded') return;
      events.emit({
        event: 'access_denied',
        correlation_id: r.correlationId,
        tenant: r.tenant,
        flow: r.flow,
        http_status: r.status,
        reason: r.reason,
      });
      if (audited(r)) {
        audit.append({
          tenant: r.subjectTenant,
          eventType: 'access.denied',
          correlationId: r.correlationId,
          payload: auditPayload(r),
        });
      }
    },
    closeWindow: () => {
      for (const folded of folder.closeWindow()) writeSummary(events, audit, folded);
    },
  };
}

function writeSummary(
  events: EventEmitter,
  audit: AuditAppender,
  { sample: r, repeats, firstMs, lastMs }: FoldedRepeats<GateRefusal>,
): void {
  const fold = { repeats, first_at: isoMillis(firstMs), last_at: isoMillis(lastMs) };
  events.emit({
    event: 'access_denied',
    tenant: r.tenant || null,
    flow: r.flow || null,
    http_status: r.status,
    reason: r.reason,
    payload: fold,
  });
  if (audited(r))
    audit.append({ tenant: r.subjectTenant, eventType: 'access.denied', payload: { ...auditPayload(r), ...fold } });
}

function audited(r: GateRefusal): r is GateRefusal & { subjectTenant: string } {
  return r.subjectTenant !== undefined && r.status !== 503;
}

function auditPayload(r: GateRefusal): Record<string, unknown> {
  return { flow: r.tenant ? `${r.tenant}/${r.flow}` : null, status: r.status, key_id: r.keyId, reason: r.reason };
}

function kindOf(r: GateRefusal): string {
  return `${r.status}\u0000${r.subjectTenant ?? ''}\u0000${r.keyId ?? ''}\u0000${r.tenant}\u0000${r.flow}\u0000${r.reason}`;
}
