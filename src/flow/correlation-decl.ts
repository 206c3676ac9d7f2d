/**
 * The shape rules of `correlation_open` / `correlation_state` and their lowering to the typed
 * `CorrelationIR`: one pure step shared by the compiler (publication errors) and the loader of
 * IR-version-1 artifacts, which stored the mappings as written (src/flow/stored-ir.ts).
 */
import { describeNameProblem } from '../common/names.js';
import type { CorrelationIR, CorrelationOpenIR } from '../ir/types.js';

/** A correlation declaration as written in the front matter (and as IR version 1 stored it). */
export interface CorrelationSource {
  open?: Record<string, unknown>;
  state?: Record<string, unknown>;
}

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
export function correlationDeclProblems(c: CorrelationSource): CorrelationProblem[] {
  const problems: CorrelationProblem[] = [];
  const add = (key: CorrelationProblem['key'], message: string, kind: CorrelationProblem['kind'] = 'config') =>
    problems.push({ key, kind, message });
  const open = c.open;
  if (open === undefined) {
    add('correlation_state', 'correlation_state needs correlation_open (a mapping with key and deadline_secs)');
    return problems;
  }
  const closing = 'closes' in open;
  const allowed = closing ? CORRELATION_CLOSE_KEYS : CORRELATION_OPEN_KEYS;
  for (const k of Object.keys(open))
    if (!allowed.has(k))
      add('correlation_open', `correlation_open: unknown key "${k}" (accepted: ${[...allowed].join(', ')})`);
  if (typeof open.key !== 'string' || open.key.trim() === '')
    add(
      'correlation_open',
      'correlation_open.key must be a non-empty expression over the request, e.g. ctx.input.order_id',
    );
  if (closing) {
    if (typeof open.closes !== 'string' || describeNameProblem('flow', open.closes) !== undefined)
      add('correlation_open', 'correlation_open.closes must name the opening flow of the same tenant', 'name');
    if (c.state !== undefined)
      add('correlation_state', 'correlation_state belongs on the opening flow, not on a closing one');
    return problems;
  }
  const d = open.deadline_secs;
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 1)
    add('correlation_open', 'correlation_open.deadline_secs must be a whole number of seconds of at least 1');
  if (
    open.on_timeout !== undefined &&
    (typeof open.on_timeout !== 'string' || describeNameProblem('flow', open.on_timeout) !== undefined)
  ) {
    add('correlation_open', 'correlation_open.on_timeout must name a flow of the same tenant', 'name');
  }
  if (open.step !== undefined && typeof open.step !== 'string')
    add('correlation_open', 'correlation_open.step must be a step name');
  for (const [k, v] of Object.entries(c.state ?? {}))
    if (typeof v !== 'string') add('correlation_state', `correlation_state.${k} must be an expression`);
  return problems;
}

/** The typed IR of a declaration, present exactly when it has no problems. */
export function lowerCorrelation(c: CorrelationSource): { ir?: CorrelationIR; problems: CorrelationProblem[] } {
  const problems = correlationDeclProblems(c);
  if (problems.length > 0) return { problems };
  // The checks above guarantee every cast below.
  const open = c.open!;
  if ('closes' in open)
    return { ir: { kind: 'close', key: open.key as string, closes: open.closes as string }, problems };
  const ir: CorrelationOpenIR = { kind: 'open', key: open.key as string, deadlineSecs: open.deadline_secs as number };
  if (open.on_timeout !== undefined) ir.onTimeout = open.on_timeout as string;
  if (open.step !== undefined) ir.step = open.step as string;
  if (c.state !== undefined) ir.state = c.state as Record<string, string>;
  return { ir, problems };
}
