/** The queue contract's dead letters: an entry, a listing row, a replay's result and the one refusal of a missing entry. */
import { SvcError } from '../../common/errors.js';
import type { AppendResult } from './messages.js';

/** One dead letter (the field names are the file format, and PostgreSQL's columns). */
export interface DeadLetter {
  readonly id: number;
  readonly payload: unknown;
  readonly enqueued_at: string;
  readonly failed_at: string;
  /** Attempts consumed. */
  readonly attempts: number;
  readonly last_error: string;
}

/** A pending dead letter with its queue. */
export interface DeadLetterRow extends DeadLetter {
  readonly tenant: string;
  readonly flow: string;
}

export interface ReplayResult {
  readonly entry: DeadLetter;
  /** The new message: a new id, fresh attempts, a fresh correlation id. */
  readonly message: AppendResult & { readonly correlationId: string };
}

/** The refusal of a replay or discard naming no pending dead letter (every backend's words). */
export function deadLetterNotFound(tenant: string, flow: string, id: number): SvcError {
  return new SvcError(
    'SVC_ERR_NOT_FOUND',
    `no pending dead letter with id ${id} in queue ${tenant}/${flow} (list them with: svc dlq list --tenant ${tenant} --flow ${flow})`,
  );
}
