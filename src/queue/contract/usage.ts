/** What one tenant's queues hold, as the per-tenant bounds count it (QueueStore.tenantUsage). */
export interface TenantQueueUsage {
  /**
   * The tenant's queues: every queue the store holds for it, empty ones included. A queue, once it
   * took a message, stays for good (its id counter: ids are never reissued, the spec's rule), so
   * this is how many flow names the tenant has ever submitted to.
   */
  readonly flows: readonly string[];
  /**
   * Bytes the tenant's queues take. On files, the space allocated to their directories and files
   * (what `du` counts, empty queues included): what the disk gives up, not what the messages say.
   * On PostgreSQL, the size of their message and dead-letter rows.
   */
  readonly bytes: number;
}
