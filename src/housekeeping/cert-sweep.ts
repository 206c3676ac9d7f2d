/**
 * The certificate expiry sweep: `cert_expiring` (with days left) for each current certificate inside
 * the warning window, `cert_expired` for each expired one. At every start and once per installation
 * per interval: the process that claims the run (compare-and-set in the registry) sweeps, the
 * others skip it (claimWindowMs).
 */
import { sweepCertificates } from '../app/use-cases/certificates.js';
import type { CertificatesStore } from '../store/contracts/index.js';
import type { EventEmitter } from '../store/event-log/event-sink.js';

export interface CertSweepDeps {
  readonly certificates: CertificatesStore;
  readonly events: EventEmitter;
  /** `cert_warning_days`. */
  warningDays(): number;
  /** The sweep interval. Milliseconds. */
  readonly intervalMs: number;
}

/** A run claimed less than this share of the interval ago is not repeated (timers drift a little). */
const CLAIM_SHARE = 0.9;

/**
 * How recent another process's sweep may be for this one to skip its own. The periodic sweep skips
 * one claimed within 90% of the interval (once per installation per interval). The start-up sweep
 * skips only one claimed within `startShareMs`: the spec sweeps "at startup", and an operator who
 * restarts after a deploy expects a fresh expiry check (a claim of 90% of a day skipped it for
 * 21.6 hours), while processes started together still emit each warning once.
 */
export function claimWindowMs(intervalMs: number, atStart: boolean, startShareMs: number): number {
  return atStart ? Math.min(startShareMs, intervalMs * CLAIM_SHARE) : intervalMs * CLAIM_SHARE;
}

export async function runCertSweep(
  deps: CertSweepDeps,
  now = Date.now(),
  windowMs = claimWindowMs(deps.intervalMs, false, 0),
): Promise<{ swept: boolean; emitted: number }> {
  if (!(await deps.certificates.claimTaskRun('cert_sweep', now, windowMs))) return { swept: false, emitted: 0 };
  const found = await sweepCertificates(deps, deps.warningDays(), now);
  for (const f of found) {
    deps.events.emit({
      event: f.event,
      tenant: f.row.tenant,
      outcome: f.event === 'cert_expired' ? 'expired' : 'expiring',
      reason:
        f.event === 'cert_expired'
          ? `certificate ${f.row.name} expired at ${f.row.validTo}`
          : `certificate ${f.row.name} expires in ${f.daysLeft} day(s), at ${f.row.validTo}`,
      payload: {
        certificate: f.row.name,
        kind: f.row.kind,
        days_left: f.daysLeft,
        valid_to: f.row.validTo,
        sha256: f.row.sha256,
      },
      logLevel: 'full',
    });
  }
  return { swept: true, emitted: found.length };
}
