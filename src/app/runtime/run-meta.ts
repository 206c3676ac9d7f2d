/** What a door knows about one delivery when it hands a flow to the executor (types only). */
import type { IncomingTraceContext } from '../../common/trace-context/spans.js';

/**
 * The door a delivery came through. It decides the boundary rows (`received`/`completed` for the
 * synchronous doors, `queue_processed`/`queue_filtered` for the queue), whether the execution
 * counts against `max_concurrent_flow_executions` (not the queue: its workers bound themselves),
 * and what a false `condition` means (answered, or dropped as `filtered` on the queue).
 */
export type Door = 'http' | 'soap' | 'grpc' | 'cron' | 'queue';

export interface RunMeta {
  readonly door: Door;
  readonly correlationId: string;
  /** `ctx.headers` (built by the door; credentials and hop-by-hop names already stripped). */
  readonly headers: Record<string, string>;
  /** `ctx.soap_action` / `ctx.soap_version` of a SOAP request. */
  readonly soap?: { readonly action?: string; readonly version?: string } | undefined;
  /**
   * W3C `traceparent`/`tracestate` as the caller sent them (HTTP headers, gRPC metadata, or the
   * copies a queued message carries). The execution's span becomes a child of the caller's; an
   * invalid or absent one starts a new trace.
   */
  readonly traceContext?: IncomingTraceContext | undefined;
  /** A queued delivery's enqueue time (ISO 8601 UTC): its duration counts the wait in the queue from here. */
  readonly enqueuedAt?: string | undefined;
}
