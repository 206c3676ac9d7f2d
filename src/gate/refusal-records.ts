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

/** Kinds of refusal (callers: status, key) tracked per window before new ones fold into one per status. */
const MAX_REFUSAL_KINDS = 1024;

/** The reason of a summary that folds refusals of many kinds (past MAX_REFUSAL_KINDS in a window). */
export const MANY_KINDS_REASON = `refusals of more than ${MAX_REFUSAL_KINDS} callers in one window (status kept, key, tenant, flow and reason varied)`;

export interface RefusalRecords extends GateSinks {
  /** Closes the window (every 10 s in service): writes one summary per kind of refusal that repeated in it. */
  closeWindow(): void;
}

/**
 * Every refusal is recorded, as the spec requires: the first five of a kind in a window each by
 * its own log row (and, for a policy verdict on a found key, not a 503, which says nothing of the
 * caller, its own audit entry on that key's tenant chain); further repeats of the kind in the
 * window by one summary row and entry when the window closes, carrying `repeats`, `first_at` and
 * `last_at` in the payload (and a kind still repeating then gets only its summary in the next
 * window: see RepeatFolder).
 *
 * A kind is the caller and the verdict: the status, the key (none for a keyless caller) and the
 * reason with the path's tenant and flow taken out (`'<tenant>'`, `'<flow>'`). The tenant and flow
 * are the caller's choice, so they only vary a kind: a summary of one variant names them as
 * before, one of several says how many (`variants`) and names neither. Measured before: a keyless
 * client varying the flow name wrote about 300 bytes per refused request (every name a new kind
 * with five records of its own).
 */
export function refusalRecords(
  events: EventEmitter,
  audit: AuditAppender,
  nowMs: () => number = Date.now,
): RefusalRecords {
  const folder = new RepeatFolder<GateRefusal>({ maxKinds: MAX_REFUSAL_KINDS, variantOf });
  return {
    refused: (r: GateRefusal) => {
      const verdict = folder.note(kindOf(r), r, nowMs(), () => {
        const coarse: GateRefusal = { status: r.status, reason: MANY_KINDS_REASON, tenant: '', flow: '' };
        return { kind: `many\u0000${r.status}`, record: coarse };
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
  { sample, repeats, firstMs, lastMs, variants, moreVariants }: FoldedRepeats<GateRefusal>,
): void {
  const varied = variants > 1;
  const fold = {
    repeats,
    first_at: isoMillis(firstMs),
    last_at: isoMillis(lastMs),
    ...(varied ? { variants: moreVariants ? `${variants}+` : variants } : {}),
  };
  // Several tenants, flows or reasons: none of them is named (each was the caller's choice).
  const r: GateRefusal = varied
    ? {
        ...sample,
        tenant: '',
        flow: '',
        reason: `${sample.status} refusals of this caller, tenant, flow or reason varied`,
      }
    : sample;
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

/** The caller and the verdict. */
function kindOf(r: GateRefusal): string {
  return `${r.status}\u0000${r.subjectTenant ?? ''}\u0000${r.keyId ?? ''}\u0000${reasonShape(r)}`;
}

/** What the caller chose: the path's tenant and flow. */
function variantOf(r: GateRefusal): string {
  return `${r.tenant}\u0000${r.flow}`;
}

/** The reason without the names the caller chose (reasons quote the path's tenant and flow). */
function reasonShape(r: GateRefusal): string {
  let shape = r.reason;
  if (r.tenant !== '') shape = shape.replaceAll(`'${r.tenant}'`, "'<tenant>'");
  if (r.flow !== '') shape = shape.replaceAll(`'${r.flow}'`, "'<flow>'");
  return shape;
}
