/** The payload-tracing flags contract. */
import type { Awaitable } from '../../common/awaitable.js';

/** One (tenant, flow) flag as stored. */
export interface TraceFlag {
  readonly tenant: string;
  readonly flow: string;
  readonly enabled: boolean;
  /** ISO 8601 UTC of the last change. */
  readonly updated_at: string;
}

/** The storage contract: implemented by store/sqlite/ and store/pg/. */
export interface TraceStore {
  isEnabled(tenant: string, flow: string): Awaitable<boolean>;
  /** True only when the flag changed. */
  set(tenant: string, flow: string, enabled: boolean, at: string): Awaitable<boolean>;
  list(tenant?: string): Awaitable<TraceFlag[]>;
}
