/**
 * Every platform setting (`system_config` key/value rows): its name, default and parsing.
 * A value that cannot be parsed falls back to its default; unlimited cannot be expressed.
 */
import { availableParallelism } from 'node:os';

export interface SettingDef {
  readonly name: string;
  readonly description: string;
  /** When the service reads it: once at startup, or per request / per cycle. */
  readonly readAt: 'startup' | 'per-request' | 'per-cycle';
  defaultValue(): number;
  /** Smallest accepted value; anything below falls back to the default. */
  readonly min: number;
  readonly integer: boolean;
}

const cores = () => availableParallelism();

function def(
  name: string,
  description: string,
  readAt: SettingDef['readAt'],
  defaultValue: () => number,
  min = 1,
  integer = true,
): SettingDef {
  return Object.freeze({ name, description, readAt, defaultValue, min, integer });
}

export const Settings = {
  max_message_bytes: def(
    'max_message_bytes',
    'Message body ceiling in bytes for /run, /enqueue and outbound responses',
    'per-request',
    () => 1_048_576,
  ),
  max_concurrent_flow_executions: def(
    'max_concurrent_flow_executions',
    'Executions in flight before /run answers 503',
    'startup',
    () => Math.min(32 * cores(), 256),
  ),
  max_queue_workers: def(
    'max_queue_workers',
    'Queues served at once per process (a pool: queues with work take turns)',
    'startup',
    () => Math.min(4 * cores(), 64),
  ),
  max_queue_workers_per_tenant: def(
    'max_queue_workers_per_tenant',
    'Queues one tenant may have served at once (no row: equals max_queue_workers)',
    'startup',
    () => Math.min(4 * cores(), 64),
  ),
  queue_worker_idle_ms: def(
    'queue_worker_idle_ms',
    'Milliseconds a queue worker with nothing to deliver keeps its slot (at once given back when a queue waits)',
    'startup',
    () => 1000,
  ),
  queue_worker_turn_ms: def(
    'queue_worker_turn_ms',
    'Milliseconds a busy queue worker keeps its slot while another queue waits for one',
    'startup',
    () => 2000,
  ),
  max_queues_per_tenant: def(
    'max_queues_per_tenant',
    'Queues one tenant may have (a queue stays once made: ids are never reissued); a submission making one more answers 507',
    'startup',
    () => 1000,
  ),
  max_queue_bytes_per_tenant: def(
    'max_queue_bytes_per_tenant',
    "Bytes one tenant's queues may take on disk (or in their rows on PostgreSQL) before a submission answers 507",
    'startup',
    () => 1_073_741_824,
  ),
  flow_max_duration_secs: def(
    'flow_max_duration_secs',
    'Wall time of one execution, checked between steps',
    'startup',
    () => 7200,
  ),
  log_retention_days: def('log_retention_days', 'Days log rows are kept (files one day longer)', 'per-cycle', () => 30),
  log_payload_max_bytes: def(
    'log_payload_max_bytes',
    'Payload cap in the log at log_level payload_trimmed',
    'per-request',
    () => 4096,
  ),
  flow_state_retention_hours: def(
    'flow_state_retention_hours',
    'Hours a finished correlation row is kept past its deadline',
    'startup',
    () => 96,
  ),
  dedup_window_hours: def(
    'dedup_window_hours',
    "Installation default of a flow's dedup_window_hours",
    'startup',
    () => 24,
  ),
  cert_check_interval_hours: def(
    'cert_check_interval_hours',
    'Interval of the certificate expiry sweep',
    'startup',
    () => 24,
  ),
  cert_warning_days: def(
    'cert_warning_days',
    'Days before expiry a certificate is reported as expiring',
    'startup',
    () => 30,
  ),
  request_body_timeout_secs: def(
    'request_body_timeout_secs',
    'Seconds a caller past the gate has to send the whole body of /run, /enqueue or a connector event (408 after)',
    'startup',
    () => 30,
  ),
  queue_compaction_interval_secs: def(
    'queue_compaction_interval_secs',
    'Interval of the queue compaction task',
    'per-cycle',
    () => 3600,
  ),
} as const satisfies Record<string, SettingDef>;

export type SettingName = keyof typeof Settings;

/** Parses a raw `system_config` value for `name`, falling back to the default when unusable. */
export function parseSetting(name: SettingName, raw: string | undefined | null): number {
  const d: SettingDef = Settings[name];
  if (raw === undefined || raw === null) return d.defaultValue();
  const text = raw.trim();
  const pattern = d.integer ? /^\d+$/ : /^\d+(\.\d+)?$/;
  if (!pattern.test(text)) return d.defaultValue();
  const value = Number(text);
  if (!Number.isFinite(value) || value < d.min) return d.defaultValue();
  return value;
}
