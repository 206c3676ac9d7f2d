/** What a door knows about one delivery when it hands a flow to the executor (types only). */

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
}
