/**
 * The shape rules of `correlation_open` / `correlation_state`: one pure check shared by the compiler
 * (publication errors) and the run-time guard (a defect if an older artifact slipped through).
 */
import { describeNameProblem } from '../common/names.js';
import type { CorrelationIR } from '../ir/types.js';

/** One thing wrong with a correlation declaration. */
export interface CorrelationProblem {
  /** The front-matter key the problem is in (the compiler reports it on that key's line). */
  key: 'correlation_open' | 'correlation_state';
  /** `name` when a flow name breaks the name rule (a name check `svc validate` also runs); else `config`. */
  kind: 'name' | 'config';
  message: string;
}

/** Keys of an opening declaration. */
export const CORRELATION_OPEN_KEYS: ReadonlySet<string> = new Set(['key', 'deadline_secs', 'on_timeout', 'step']);
/** Keys of a closing declaration (recognised by `closes`). */
export const CORRELATION_CLOSE_KEYS: ReadonlySet<string> = new Set(['key', 'closes']);

/** Validates a flow's correlation declarations; returns the problems (empty when usable). */
export function correlationDeclProblems(c: CorrelationIR): CorrelationProblem[] {
  const problems: CorrelationProblem[] = [];
  const add = (key: CorrelationProblem['key'], message: string, kind: CorrelationProblem['kind'] = 'config') => problems.push({ key, kind, message });
  const open = c.open;
  if (open === undefined) {
    add('correlation_state', 'correlation_state needs correlation_open (a mapping with key and deadline_secs)');
    return problems;
  }
  const closing = 'closes' in open;
  const allowed = closing ? CORRELATION_CLOSE_KEYS : CORRELATION_OPEN_KEYS;
  for (const k of Object.keys(open)) if (!allowed.has(k)) add('correlation_open', `correlation_open: unknown key "${k}" (accepted: ${[...allowed].join(', ')})`);
  if (typeof open.key !== 'string' || open.key.trim() === '') add('correlation_open', 'correlation_open.key must be a non-empty expression over the request, e.g. ctx.input.order_id');
  if (closing) {
    if (typeof open.closes !== 'string' || describeNameProblem('flow', open.closes) !== undefined) add('correlation_open', 'correlation_open.closes must name the opening flow of the same tenant', 'name');
    if (c.state !== undefined) add('correlation_state', 'correlation_state belongs on the opening flow, not on a closing one');
    return problems;
  }
  const d = open.deadline_secs;
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 1) add('correlation_open', 'correlation_open.deadline_secs must be a whole number of seconds of at least 1');
  if (open.on_timeout !== undefined && (typeof open.on_timeout !== 'string' || describeNameProblem('flow', open.on_timeout) !== undefined)) {
    add('correlation_open', 'correlation_open.on_timeout must name a flow of the same tenant', 'name');
  }
  if (open.step !== undefined && typeof open.step !== 'string') add('correlation_open', 'correlation_open.step must be a step name');
  for (const [k, v] of Object.entries(c.state ?? {})) if (typeof v !== 'string') add('correlation_state', `correlation_state.${k} must be an expression`);
  return problems;
}

/** The problems as messages (the run-time guard's operator detail). */
export function correlationProblems(c: CorrelationIR): string[] {
  return correlationDeclProblems(c).map((p) => p.message);
}
