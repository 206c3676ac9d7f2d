/**
 * What a handler's outcome means for the message, decided the same way by every queue backend
 * (the files of the state directory, PostgreSQL): acknowledged, tried again later (with the
 * attempts it will have consumed and when), or dead-lettered.
 */
import { retryDelayMs, type Outcome, type QueueMessage } from './contract.js';

export type Settlement =
  | { readonly kind: 'ack' }
  | {
      readonly kind: 'retry';
      /** Attempts consumed once it is rescheduled (a `retry-fixed` consumes none). */
      readonly attempts: number;
      readonly delayMs: number;
      /** Epoch milliseconds. */
      readonly dueMs: number;
      readonly fixed: boolean;
      readonly error: string;
      /** The step that failed, when the outcome named one: for the reports, never stored. */
      readonly step: string | undefined;
    }
  | { readonly kind: 'dead'; readonly error: string; readonly attempts: number; readonly step: string | undefined };

export function settlementOf(msg: QueueMessage, outcome: Outcome, nowMs: number): Settlement {
  if (outcome.kind === 'ack') return outcome;
  if (outcome.kind === 'retry-fixed' || (outcome.kind === 'retry' && msg.attempt < outcome.policy.maxAttempts)) {
    const fixed = outcome.kind === 'retry-fixed';
    const delayMs = fixed ? outcome.delayMs : (outcome.delayMs ?? retryDelayMs(outcome.policy, msg.attempt));
    return {
      kind: 'retry',
      attempts: fixed ? msg.attempt - 1 : msg.attempt,
      delayMs,
      dueMs: nowMs + delayMs,
      fixed,
      error: outcome.error ?? 'retry requested',
      step: fixed ? undefined : outcome.step,
    };
  }
  return { kind: 'dead', error: outcome.error, attempts: msg.attempt, step: outcome.step };
}
