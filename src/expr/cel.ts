/** The one CEL environment every flow expression runs in: `ctx` as the only variable, plus now/uuid/date_format. */
import { Environment, ParseError, TypeError as CelTypeError } from '@marcbachmann/cel-js';
import { ambientNowMs, ambientUuid } from './ambient.js';
import { XmlValue } from '../common/xml-value.js';
import { xmlToJson } from '../common/xml.js';
import { formatDate } from './date-format.js';
import { toPlain } from './to-plain.js';
import { compileFast, DEFER, type FastExpr } from './cel-fast.js';

export { toPlain } from './to-plain.js';
export { DEFER, type FastExpr } from './cel-fast.js';

/** A compiled expression: evaluates against a flow context and returns a plain JS/JSON value. */
export type CompiledExpr = (ctx: Record<string, unknown>) => unknown;

/** An expression that does not parse (or names an unknown variable or function). */
export class ExprSyntaxError extends Error {
  /** @param column 1-based column inside the expression source, when the parser reports one */
  constructor(
    message: string,
    readonly source: string,
    readonly column?: number,
  ) {
    super(message);
    this.name = 'ExprSyntaxError';
  }
}

/** An expression that parsed but failed while running (missing key, no such overload, ...). */
export class ExprEvalError extends Error {
  constructor(
    message: string,
    readonly source: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ExprEvalError';
  }
}

/** The functions flows may call beyond standard CEL, with their documentation (shown in docs and tests). */
export const EXPR_FUNCTIONS: Readonly<Record<string, string>> = Object.freeze({
  'now()': 'the current instant as an ISO 8601 UTC string with milliseconds, e.g. "2024-05-01T12:00:00.000Z"',
  'uuid()': 'a random UUID v4 string',
  'fields(value)':
    'the fields of a message as a map: a map as it is, an XML value (a SOAP Body, an XML input) as its JSON form with child elements as keys, so fields(ctx.input).symbol reads either',
  'date_format(value, pattern)':
    'formats a timestamp or an ISO 8601 string in UTC; tokens YYYY YY MM M DD D HH H mm m ss s SSS Z, text in [brackets] is literal',
});

const env = buildEnvironment();

/** An XML value's JSON form (child elements as keys, the root dropped), a map even when the element is empty or text. */
function fieldsOfXml(x: XmlValue): unknown {
  const json = xmlToJson(x.xml);
  return typeof json === 'object' && json !== null && !Array.isArray(json) ? json : {};
}

function buildEnvironment(): Environment {
  const e = new Environment({ homogeneousAggregateLiterals: false })
    .registerType('XmlValue', { ctor: XmlValue, fields: { xml: 'string', root: 'string' } })
    .registerVariable('ctx', 'map')
    .registerFunction('now(): string', () => new Date(ambientNowMs()).toISOString())
    .registerFunction('uuid(): string', () => ambientUuid())
    .registerFunction('fields(XmlValue): map', (x: XmlValue) => fieldsOfXml(x))
    .registerFunction('fields(map): map', (m: unknown) => m)
    .registerFunction('date_format(google.protobuf.Timestamp, string): string', (d: Date, p: string) =>
      formatDate(d, p),
    )
    .registerFunction('date_format(string, string): string', (s: string, p: string) => formatDate(parseInstant(s), p));
  // JSON numbers arrive as doubles while CEL literals are ints: without these overloads
  // `ctx.input.amount + 1` would fail with "no such overload: double + int".
  const ops: Record<string, (a: number, b: number) => number> = {
    '+': (a, b) => a + b,
    '-': (a, b) => a - b,
    '*': (a, b) => a * b,
    '/': (a, b) => a / b,
    '%': (a, b) => a % b,
  };
  for (const [op, fn] of Object.entries(ops)) {
    e.registerOperator(`double ${op} int: double`, (a: number, b: bigint) => fn(a, Number(b)));
    e.registerOperator(`int ${op} double: double`, (a: bigint, b: number) => fn(Number(a), b));
  }
  return e;
}

function parseInstant(s: string): Date {
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) throw new Error(`date_format: "${s}" is not an ISO 8601 date or instant`);
  return d;
}

const cache = new Map<string, CompiledExpr>();
/** Bounded so a stream of distinct expressions cannot grow memory without limit. */
const CACHE_MAX = 10_000;

/**
 * Compiles CEL source once (cached by text) into a function of the flow context. Expressions in
 * the fast subset (see cel-fast.ts) run as direct closures that hand every case they are not sure
 * of to the interpreter, so results and errors are the interpreter's either way.
 * @throws ExprSyntaxError when the source does not parse or names an unknown variable or function
 */
export function compileExpr(src: string): CompiledExpr {
  const hit = cache.get(src);
  if (hit) return hit;
  const parsed = parseChecked(src);
  const interpreted = interpretedClosure(src, parsed);
  const fast = compileFast(parsed.ast);
  const compiled = fast === undefined ? interpreted : withFallback(fast, interpreted);
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(src, compiled);
  return compiled;
}

/**
 * Compiles with the interpreter only (no fast path, no cache): the oracle the fast path is tested against.
 * @throws ExprSyntaxError as compileExpr
 */
export function compileExprInterpreted(src: string): CompiledExpr {
  return interpretedClosure(src, parseChecked(src));
}

/**
 * The raw fast closure compileExpr uses for `src` (it returns DEFER where the interpreter decides),
 * or undefined when `src` lies outside the fast subset. For tests and benchmarks.
 * @throws ExprSyntaxError as compileExpr
 */
export function fastPathOf(src: string): FastExpr | undefined {
  return compileFast(parseChecked(src).ast);
}

type Parsed = ReturnType<Environment['parse']>;

function parseChecked(src: string): Parsed {
  const problem = checkExpr(src);
  if (problem !== undefined) throw new ExprSyntaxError(problem.message, src, problem.column);
  return env.parse(src);
}

function withFallback(fast: FastExpr, interpreted: CompiledExpr): CompiledExpr {
  return (ctx) => {
    const out = fast(ctx);
    return out === DEFER ? interpreted(ctx) : out;
  };
}

/** The interpreter's closure over a parsed expression, with the result made plain and errors named. */
function interpretedClosure(src: string, parsed: Parsed): CompiledExpr {
  // ctx holds plain JSON values (and XmlValue), so only aggregates the expression builds itself
  // (literals, function and macro results) can hide BigInts: skip the deep walk otherwise.
  const deep = buildsAggregates(parsed.ast);
  return (ctx) => {
    let out: unknown;
    try {
      // The context object is passed by reference: no copy per evaluation.
      out = parsed({ ctx });
    } catch (err) {
      // The evaluator types an object by its `constructor` property, so JSON data holding a key named
      // "constructor" looks like an unknown class (or, null, breaks the evaluator outright). Such
      // data is ordinary JSON: whatever the evaluator threw, evaluate once more over a copy where
      // those objects are Maps (only on this rare path; the result is made plain).
      if (hasConstructorKey(ctx)) {
        try {
          return toPlain(parsed({ ctx: mapsForConstructorKeys(ctx) }));
        } catch (again) {
          throw new ExprEvalError(`expression \`${src}\` failed: ${valueFree(firstLine(again), src)}`, src, {
            cause: again,
          });
        }
      }
      throw new ExprEvalError(`expression \`${src}\` failed: ${valueFree(firstLine(err), src)}`, src, { cause: err });
    }
    return deep || typeof out !== 'object' ? toPlain(out) : out;
  };
}

interface AstLike {
  op?: unknown;
  args?: unknown;
}

function buildsAggregates(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(buildsAggregates);
  if (node === null || typeof node !== 'object') return false;
  const n = node as AstLike;
  if (n.op === 'list' || n.op === 'map' || n.op === 'call' || n.op === 'rcall') return true;
  if (n.op === 'value') return false;
  return buildsAggregates(n.args);
}

/**
 * Parses and resolves names (only `ctx` and the registered functions exist) without evaluating.
 * @returns undefined when the expression is well formed, otherwise a one-line explanation
 */
export function checkExprSyntax(src: string): string | undefined {
  return checkExpr(src)?.message;
}

/** Like checkExprSyntax, but also returns the 1-based column of the problem when known. */
export function checkExpr(src: string): { message: string; column?: number } | undefined {
  if (src.trim() === '') return { message: 'the expression is empty' };
  try {
    const result = env.check(src);
    return result.valid ? undefined : describe(result.error);
  } catch (err) {
    return describe(err);
  }
}

function describe(err: unknown): { message: string; column?: number } {
  if (err instanceof ParseError || err instanceof CelTypeError) {
    const start = err.range?.start;
    return { message: err.summary || firstLine(err), ...(typeof start === 'number' ? { column: start + 1 } : {}) };
  }
  return { message: firstLine(err) };
}

/** Evaluator messages that end with a value of the data (a key looked up, a text that did not parse). */
const VALUE_TAIL = /^(.*(?:No such key|Invalid duration string|Invalid regular expression)): (.+)$/;

/**
 * The evaluator's message without the data it was given. Some messages quote a value of the
 * context (`invalid string value "4111..."`, `No such key: <a key computed from the input>`), and
 * this text is the log's `reason` and a fault handler's `fault_error`, which never hold a request's
 * values, masked ones included. A quoted or trailing text that the expression's own source does not
 * hold is replaced by `<value>`; what the author wrote stays (`No such key: totl` for `ctx.input.totl`).
 */
export function valueFree(message: string, src: string): string {
  const quotedLeft = message.replace(/(["'])((?:(?!\1).)*)\1/g, (whole, q: string, v: string) =>
    src.includes(v) ? whole : `${q}<value>${q}`,
  );
  const tail = VALUE_TAIL.exec(quotedLeft);
  if (tail === null || src.includes(tail[2]!) || tail[2] === '"<value>"' || tail[2] === "'<value>'") return quotedLeft;
  return `${tail[1]}: <value>`;
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0] ?? msg;
}

/**
 * True when a plain object anywhere in `v` has an own key "constructor". Recursive but bounded
 * (256 levels): context values nest at most JSON_MAX_DEPTH levels (bodies and every value a step
 * makes are checked).
 */
function hasConstructorKey(v: unknown, depth = 0): boolean {
  if (typeof v !== 'object' || v === null || depth > 256) return false;
  if (Array.isArray(v)) return v.some((item) => hasConstructorKey(item, depth + 1));
  if (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null) return false;
  if (Object.hasOwn(v, 'constructor')) return true;
  return Object.values(v).some((item) => hasConstructorKey(item, depth + 1));
}

/** A copy of `v` where every plain object with an own "constructor" key is a Map (the evaluator reads Maps by key). */
function mapsForConstructorKeys(v: unknown, depth = 0): unknown {
  if (typeof v !== 'object' || v === null || depth > 256) return v;
  if (Array.isArray(v)) return v.map((item) => mapsForConstructorKeys(item, depth + 1));
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return v;
  const entries = Object.entries(v).map(([k, item]) => [k, mapsForConstructorKeys(item, depth + 1)] as const);
  return Object.hasOwn(v, 'constructor') ? new Map(entries) : Object.fromEntries(entries);
}
