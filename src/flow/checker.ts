/** Typed readers for key values: each reports a publication error and returns undefined on a bad value. */
import { describeNameProblem } from '../common/names.js';
import { checkExpr } from '../expr/cel.js';
import { checkTemplate } from '../expr/template.js';
import type { Expr, Template } from '../ir/types.js';
import {
  FlowErrorCode,
  formatMessage,
  formatWarningMessage,
  type FlowWarningCode,
  type OnError,
  type OnWarning,
} from './diagnostics.js';
import type { KeyEntry } from './parse.js';

/** Front-matter and step keys that take an expression may also be written as one whole `{{ }}` hole. */
const WHOLE_HOLE = /^\s*\{\{([\s\S]*)\}\}\s*$/;

export class Checker {
  constructor(
    readonly file: string,
    readonly onError: OnError,
    readonly onWarning: OnWarning = () => undefined,
  ) {}

  error(
    code: FlowErrorCode,
    at: { line: number; file?: string },
    step: string,
    args: Record<string, string | number> = {},
    column = 1,
  ): void {
    this.onError({ code, message: formatMessage(code, args), file: at.file ?? this.file, line: at.line, column, step });
  }

  /** A condition that does not stop publication; reported like an error, at the key's line. */
  warn(
    code: FlowWarningCode,
    at: { line: number; file?: string },
    step: string,
    args: Record<string, string | number> = {},
  ): void {
    this.onWarning({
      code,
      message: formatWarningMessage(code, args),
      file: at.file ?? this.file,
      line: at.line,
      column: 1,
      step,
    });
  }

  text(e: KeyEntry, step: string): string | undefined {
    if (typeof e.value === 'string') return e.value;
    if (typeof e.value === 'number' || typeof e.value === 'boolean') return String(e.value);
    this.error(FlowErrorCode.INVALID_VALUE, e, step, { key: e.key, detail: 'must be text' });
    return undefined;
  }

  int(e: KeyEntry, step: string, min: number): number | undefined {
    if (typeof e.value === 'number' && Number.isInteger(e.value) && e.value >= min) return e.value;
    this.error(FlowErrorCode.INVALID_VALUE, e, step, {
      key: e.key,
      detail: `must be a whole number of at least ${min}, got ${JSON.stringify(e.value)}`,
    });
    return undefined;
  }

  bool(e: KeyEntry, step: string): boolean | undefined {
    if (typeof e.value === 'boolean') return e.value;
    this.error(FlowErrorCode.INVALID_VALUE, e, step, {
      key: e.key,
      detail: `must be true or false, got ${JSON.stringify(e.value)}`,
    });
    return undefined;
  }

  name(e: KeyEntry, step: string, what: string, value: unknown = e.value): string | undefined {
    const s = typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
    const problem =
      s === undefined ? `${what} must be a name, got ${JSON.stringify(value)}` : describeNameProblem(what, s);
    if (problem !== undefined) {
      this.error(FlowErrorCode.INVALID_NAME, e, step, { detail: problem });
      return undefined;
    }
    return s;
  }

  list(e: KeyEntry, step: string): string[] | undefined {
    const v = typeof e.value === 'string' ? [e.value] : e.value;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number')) return v.map(String);
    this.error(FlowErrorCode.INVALID_VALUE, e, step, {
      key: e.key,
      detail: `must be a list of text, e.g. [a, b], got ${JSON.stringify(e.value)}`,
    });
    return undefined;
  }

  /** A bare CEL expression, or the same written as one whole hole; stored bare. */
  expr(e: KeyEntry, step: string, raw: unknown = e.value, where = e.key): Expr | undefined {
    const s =
      typeof raw === 'string' ? raw : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : undefined;
    if (s === undefined) {
      this.error(FlowErrorCode.INVALID_VALUE, e, step, { key: where, detail: 'must be a CEL expression' });
      return undefined;
    }
    const whole = WHOLE_HOLE.exec(s);
    const src = (whole && !whole[1]!.includes('{{') ? whole[1]! : s).trim();
    return this.checkExprAt(src, e, step, where, where.length + 3) ? src : undefined;
  }

  /** Checks CEL syntax and names; reports at `at` with the column offset by `col0 - 1`. */
  checkExprAt(src: string, at: { line: number; file?: string }, step: string, where: string, col0 = 1): boolean {
    const problem = checkExpr(src);
    if (!problem) return true;
    this.error(
      FlowErrorCode.EXPR_SYNTAX,
      at,
      step,
      { where, detail: problem.message },
      col0 + (problem.column ?? 1) - 1,
    );
    return false;
  }

  template(e: KeyEntry, step: string, raw: unknown = e.value, where = e.key): Template | undefined {
    let s: string;
    if (typeof raw === 'string') s = raw;
    else if (typeof raw === 'number' || typeof raw === 'boolean' || raw === null)
      s = `{{ ${JSON.stringify(raw)} }}`; // keeps the type
    else {
      this.error(FlowErrorCode.INVALID_VALUE, e, step, { key: where, detail: 'must be text or a {{ }} template' });
      return undefined;
    }
    const problem = checkTemplate(s);
    if (problem) {
      this.error(
        FlowErrorCode.TEMPLATE_SYNTAX,
        e,
        step,
        { where, detail: problem.message },
        where.length + 3 + problem.offset,
      );
      return undefined;
    }
    return s;
  }
}

/** Suggests the closest known key for a misspelt one. */
export function hintFor(key: string, known: Iterable<string>): string {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best ? ` (did you mean "${best}"?)` : '';
}

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}
