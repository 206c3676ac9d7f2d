/**
 * Intervals of the background tasks. The spec fixes them; the SVC_TEST_* environment variables
 * override them (milliseconds) so black-box tests prove each timer's effect in seconds. They are
 * test-only: an operator has no reason to set them.
 */

export interface HousekeepingIntervals {
  /** Log retention: every 6 h and at startup. */
  logRetentionMs: number;
  /** Flow-state purge: every 6 h and at startup. */
  flowStatePurgeMs: number;
  /** Correlation reconcile: every 60 s, the first pass at once. */
  correlationReconcileMs: number;
  /** How often a process without the scheduler lock tries to take it. */
  schedulerPollMs: number;
  /** Lease of the scheduler lock. */
  schedulerLeaseMs: number;
  /** Certificate sweep; undefined: the `cert_check_interval_hours` setting decides. */
  certSweepMs?: number;
  /**
   * Processes of one installation that start within this of another's start-up certificate sweep
   * share it (two started together emit each warning once); any later start sweeps again: 10 s.
   */
  certStartShareMs: number;
  /** The window in which repeats of one gate refusal fold into one summary record: 10 s. */
  refusalWindowMs: number;
  /** With `--store`: the node lease (`idle_session_timeout` of its session; a paused node's locks go after it): 10 s. */
  nodeLeaseMs: number;
}

const HOUR = 3_600_000;

/** Test-only overrides: variable name -> field. Values are whole milliseconds >= 10. */
export const TEST_INTERVAL_ENV: Readonly<Record<keyof HousekeepingIntervals, string>> = Object.freeze({
  logRetentionMs: 'SVC_TEST_LOG_RETENTION_INTERVAL_MS',
  flowStatePurgeMs: 'SVC_TEST_FLOW_STATE_PURGE_INTERVAL_MS',
  correlationReconcileMs: 'SVC_TEST_CORRELATION_RECONCILE_INTERVAL_MS',
  schedulerPollMs: 'SVC_TEST_SCHEDULER_POLL_MS',
  schedulerLeaseMs: 'SVC_TEST_SCHEDULER_LEASE_MS',
  certSweepMs: 'SVC_TEST_CERT_SWEEP_INTERVAL_MS',
  certStartShareMs: 'SVC_TEST_CERT_START_SHARE_MS',
  refusalWindowMs: 'SVC_TEST_REFUSAL_WINDOW_MS',
  nodeLeaseMs: 'SVC_TEST_NODE_LEASE_MS',
});

export const DEFAULT_INTERVALS: Readonly<HousekeepingIntervals> = Object.freeze({
  logRetentionMs: 6 * HOUR,
  flowStatePurgeMs: 6 * HOUR,
  correlationReconcileMs: 60_000,
  schedulerPollMs: 5_000,
  schedulerLeaseMs: 30_000,
  certStartShareMs: 10_000,
  refusalWindowMs: 10_000,
  nodeLeaseMs: 10_000,
});

/** The spec's intervals, with any SVC_TEST_* override applied (an unusable value is ignored). */
export function housekeepingIntervals(env: NodeJS.ProcessEnv = process.env): HousekeepingIntervals {
  const out = { ...DEFAULT_INTERVALS };
  for (const [field, name] of Object.entries(TEST_INTERVAL_ENV) as [keyof HousekeepingIntervals, string][]) {
    const raw = env[name];
    if (raw !== undefined && /^\d+$/.test(raw.trim()) && Number(raw) >= 10) out[field] = Number(raw);
  }
  return out;
}
