/**
 * The `queue.message.enqueued` audit entry: the record of a message's acknowledgement (a 202 of
 * /enqueue, a queue_publish step). On PostgreSQL it commits with the message; on files the message's
 * record carries what it says (the outbox: QueueStore.receipts), so it is made here from either:
 * the append's result when the message is acknowledged, or the record when it is read back by a
 * process that cannot know whether the acknowledging one lived to chain it.
 */
import { wireOffset, type AppendResult, type QueuedReceipt, type QueueStore } from '../../queue/index.js';
import type { AuditEntryInput, AuditStore } from '../../store/contracts/index.js';

/** Where a submission came from (for the log and audit rows). */
export type SubmissionSource = 'enqueue' | 'queue_publish';

/** The entry of a message acknowledged just now: what its record carries (receiptEntry). */
export function enqueuedEntry(
  tenant: string,
  flow: string,
  correlationId: string,
  source: SubmissionSource,
  r: AppendResult,
): AuditEntryInput {
  return receiptEntry(tenant, flow, { id: r.id, correlationId, offset: wireOffset(r), source });
}

/** The entry of a message, made from what its record carries (or, acknowledged just now, from its append). */
export function receiptEntry(tenant: string, flow: string, r: QueuedReceipt): AuditEntryInput {
  return {
    tenant,
    eventType: 'queue.message.enqueued',
    correlationId: r.correlationId,
    payload: { flow, id: r.id, offset: r.offset, source: r.source },
  };
}

/** Entries appended per transaction while chaining a queue's receipts. */
const CHAIN_BATCH = 1000;

/**
 * Chains the receipts the tenant's queues hold in their records and the chain lacks (a server
 * killed between a 202 and its entry's write leaves them): what `svc audit --verify` and
 * `svc store migrate` do first, as they chain a dead server's spool. The audit store keeps a
 * message's first receipt, so those already chained are passed over (and a live server chaining
 * the same ones meanwhile does no harm). Reads every queue of the tenant (every tenant without one) whole.
 * @param openAudit gives the audit store; called only once a receipt is held (a command need not create audit.db)
 * @returns how many entries were chained
 */
export async function chainHeldReceipts(
  queues: QueueStore,
  openAudit: () => AuditStore,
  tenant?: string,
): Promise<number> {
  let store: AuditStore | undefined;
  let chained = 0;
  for (const q of await queues.listQueues()) {
    if (tenant !== undefined && q.tenant !== tenant) continue;
    const held = await queues.heldReceipts(q.tenant, q.flow);
    for (let i = 0; i < held.length; i += CHAIN_BATCH) {
      store ??= openAudit();
      const entries = held.slice(i, i + CHAIN_BATCH).map((r) => receiptEntry(q.tenant, q.flow, r));
      chained += (await store.appendMany(entries)).length;
    }
  }
  return chained;
}
