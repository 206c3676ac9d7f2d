/** Templates: text with `{{ <CEL> }}` holes; a template that is exactly one hole keeps the value's type. */
import { isXmlValue } from '../common/xml-value.js';
import { checkExpr, compileExpr, type CompiledExpr } from './cel.js';

export type TemplatePart = { kind: 'text'; text: string } | { kind: 'hole'; expr: string; offset: number };

export interface CompiledTemplate {
  /** True when the template is one hole (surrounding blanks allowed): render returns the typed value. */
  readonly single: boolean;
  /** True when the template has no hole at all: render returns the text unchanged. */
  readonly constant: boolean;
  render(ctx: Record<string, unknown>): unknown;
}

/** A template problem with the 0-based offset into the template source where it starts. */
export interface TemplateProblem {
  message: string;
  offset: number;
}

export class TemplateSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'TemplateSyntaxError';
  }
}

/**
 * Splits a template into text and holes. A hole ends at the first `}}` outside a CEL string
 * literal and outside braces opened inside the hole, so `{{ {"a": {"b": 1}} }}` is one hole.
 * @throws TemplateSyntaxError on a `{{` without its `}}`
 */
export function scanTemplate(src: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let pos = 0;
  for (;;) {
    const open = src.indexOf('{{', pos);
    if (open < 0) break;
    if (open > pos) parts.push({ kind: 'text', text: src.slice(pos, open) });
    const close = findHoleEnd(src, open + 2);
    if (close < 0) throw new TemplateSyntaxError('a "{{" hole is never closed with "}}"', open);
    parts.push({ kind: 'hole', expr: src.slice(open + 2, close).trim(), offset: open });
    pos = close + 2;
  }
  if (pos < src.length) parts.push({ kind: 'text', text: src.slice(pos) });
  return parts;
}

function findHoleEnd(src: string, from: number): number {
  let depth = 0;
  for (let i = from; i < src.length; i++) {
    const c = src[i];
    if (c === '"' || c === "'") {
      i = skipString(src, i);
      continue;
    }
    if (c === '}' && depth === 0 && src[i + 1] === '}') return i;
    if (c === '{') depth++;
    else if (c === '}') depth--;
  }
  return -1;
}

function skipString(src: string, start: number): number {
  const q = src[start];
  for (let i = start + 1; i < src.length; i++) {
    if (src[i] === '\\') i++;
    else if (src[i] === q) return i;
  }
  return src.length;
}

/** Renders a value into text: strings as is, null as empty, XML as its text, objects and lists as JSON. */
export function valueToText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (isXmlValue(v)) return v.xml;
  return JSON.stringify(v);
}

const cache = new Map<string, CompiledTemplate>();

/**
 * Compiles a template once (cached by text).
 * @throws TemplateSyntaxError for an unclosed hole or an expression that does not parse
 */
export function compileTemplate(src: string): CompiledTemplate {
  const hit = cache.get(src);
  if (hit) return hit;
  const problem = checkTemplate(src);
  if (problem) throw new TemplateSyntaxError(problem.message, problem.offset);
  const parts = scanTemplate(src);
  const holes = parts.filter((p) => p.kind === 'hole');
  let t: CompiledTemplate;
  if (holes.length === 0) {
    t = { single: false, constant: true, render: () => src };
  } else if (holes.length === 1 && parts.every((p) => p.kind === 'hole' || p.text.trim() === '')) {
    const fn = compileExpr(holes[0]!.expr);
    t = { single: true, constant: false, render: fn };
  } else {
    const pieces: Array<string | CompiledExpr> = parts.map((p) => (p.kind === 'text' ? p.text : compileExpr(p.expr)));
    t = {
      single: false,
      constant: false,
      render: (ctx) => {
        let out = '';
        for (const p of pieces) out += typeof p === 'string' ? p : valueToText(p(ctx));
        return out;
      },
    };
  }
  if (cache.size >= 10_000) cache.clear();
  cache.set(src, t);
  return t;
}

/** The first problem in a template (unclosed hole, empty hole, bad expression) with its offset. */
export function checkTemplate(src: string): TemplateProblem | undefined {
  let parts: TemplatePart[];
  try {
    parts = scanTemplate(src);
  } catch (err) {
    if (err instanceof TemplateSyntaxError) return { message: err.message, offset: err.offset };
    throw err;
  }
  for (const p of parts) {
    if (p.kind !== 'hole') continue;
    const problem = checkExpr(p.expr);
    if (problem) {
      // Point into the hole: past "{{" and the blanks before the expression.
      const lead = src.slice(p.offset + 2).search(/\S/);
      const offset = p.offset + 2 + Math.max(lead, 0) + (problem.column ?? 1) - 1;
      return { message: `in {{ ${p.expr} }}: ${problem.message}`, offset };
    }
  }
  return undefined;
}

/** Parses a template without evaluating it. @returns undefined when well formed, else a one-line reason */
export function checkTemplateSyntax(src: string): string | undefined {
  return checkTemplate(src)?.message;
}
