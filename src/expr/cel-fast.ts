/**
 * Direct JavaScript closures for the simplest CEL shapes (ctx selects, has(), literals, number
 * comparisons, ==/!= on simple values, && || !), so the hot request path skips the interpreter's
 * AST walk. A fast closure answers only when it is sure the interpreter would answer the same; in
 * every other case it returns DEFER and the caller runs the interpreter, which then returns or
 * throws exactly what it always did (errors are never reimplemented here).
 *
 * The subset and why each part is safe (checked against @marcbachmann/cel-js 8.0.0 by the
 * differential test in cel-fast.test.ts):
 * - `ctx.a.b`: the interpreter types an object by its `constructor` (Object or undefined: a map,
 *   read by own key) and checks the value read is a type it knows. Here every object looked into
 *   must pass that same test (a plain record, see isPlainRecord), hold the key as its own, and the
 *   value be JSON-like (string, number, boolean, null, plain record or plain array).
 * - `has(ctx.a.b)`: false when the parent plain record lacks the own key, true when it holds a
 *   JSON-like value.
 * - literals: string, double, bool, null, and int within the safe-integer range (the interpreter's
 *   BigInt, made a plain number by toPlain at the top, compares exactly like that number).
 * - `< <= > >=` on two numbers (NaN deferred), `==`/`!=` on two values of the same simple kind.
 * - `&&`, `||`, `!` on booleans: the left operand alone decides when it is the absorbing value;
 *   otherwise both must be booleans. Anything else (CEL's error-absorbing cases) defers the whole
 *   expression.
 */

/** A fast closure's answer when it cannot be sure of the interpreter's: run the interpreter instead. */
export const DEFER: unique symbol = Symbol('cel-fast-defer');

/** A fast closure: the interpreter's result for `ctx`, or DEFER. */
export type FastExpr = (ctx: Record<string, unknown>) => unknown;

/** The part of a cel-js AST node this module reads (op and args stay as parsed; evaluation adds fields). */
interface AstNode {
  readonly op: string;
  readonly args: unknown;
}

/** The only variable the environment declares. */
const ROOT = 'ctx';

/** Field names never taken on the fast path: they name object internals rather than data. */
const INTERNAL_KEYS = new Set(['constructor', '__proto__', 'prototype']);

/** Relational operators the fast path evaluates on two numbers. */
const COMPARE: Readonly<Record<string, (a: number, b: number) => boolean>> = {
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

/**
 * A fast closure for a parsed expression, or undefined when the expression lies outside the subset.
 * Reads the AST only (call it before or after evaluations: op and args never change).
 */
export function compileFast(ast: unknown): FastExpr | undefined {
  const node = asNode(ast);
  return node === undefined ? undefined : compileNode(node);
}

function compileNode(node: AstNode): FastExpr | undefined {
  switch (node.op) {
    case 'value':
    case '-_':
      return constant(literalOf(node));
    case 'id':
    case '.':
      return selectPathOf(node);
    case 'call':
      return hasMacroOf(node);
    case '<':
    case '<=':
    case '>':
    case '>=':
      return comparisonOf(node);
    case '==':
    case '!=':
      return equalityOf(node);
    case '&&':
    case '||':
      return logicalOf(node);
    case '!_':
      return negationOf(node);
    default:
      return undefined;
  }
}

function asNode(x: unknown): AstNode | undefined {
  if (typeof x !== 'object' || x === null) return undefined;
  const { op, args } = x as { op?: unknown; args?: unknown };
  return typeof op === 'string' ? { op, args } : undefined;
}

/** The two operands of a binary node, or undefined. */
function binaryArgs(node: AstNode): [AstNode, AstNode] | undefined {
  if (!Array.isArray(node.args) || node.args.length !== 2) return undefined;
  const left = asNode(node.args[0]);
  const right = asNode(node.args[1]);
  return left && right ? [left, right] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Literals

/** Marks "not a literal of the subset" (undefined is not free: null is a literal). */
const NOT_LITERAL: unique symbol = Symbol('not-literal');
type Literal = string | number | boolean | null;

/**
 * The plain value of a literal node (a `value`, or `-_` applied to a numeric `value`), as toPlain
 * would give it. Ints outside the safe-integer range, uints and bytes are not taken.
 */
function literalOf(node: AstNode): Literal | typeof NOT_LITERAL {
  if (node.op === '-_') {
    const inner = asNode(node.args);
    if (inner?.op !== 'value') return NOT_LITERAL;
    if (typeof inner.args === 'bigint') return safeInt(-inner.args); // -0n is 0n: plain 0, as toPlain gives
    if (typeof inner.args === 'number') return -inner.args;
    return NOT_LITERAL;
  }
  if (node.op !== 'value') return NOT_LITERAL;
  const v = node.args;
  if (typeof v === 'bigint') return safeInt(v);
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null) return v;
  return NOT_LITERAL;
}

/** A CEL int as the number toPlain makes of it, when that number is exact (so comparisons agree). */
function safeInt(v: bigint): number | typeof NOT_LITERAL {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : NOT_LITERAL;
}

function constant(value: Literal | typeof NOT_LITERAL): FastExpr | undefined {
  if (value === NOT_LITERAL) return undefined;
  return () => value;
}

// ---------------------------------------------------------------------------------------------
// ctx selects and has()

/** The field names of a select chain `ctx.a.b` (empty for `ctx` alone), or undefined. */
function selectKeys(node: AstNode): string[] | undefined {
  const keys: string[] = [];
  let at: AstNode | undefined = node;
  while (at?.op === '.') {
    if (!Array.isArray(at.args) || at.args.length !== 2) return undefined;
    const key: unknown = at.args[1];
    if (typeof key !== 'string' || INTERNAL_KEYS.has(key)) return undefined;
    keys.push(key);
    at = asNode(at.args[0]);
  }
  if (at?.op !== 'id' || at.args !== ROOT) return undefined;
  return keys.reverse();
}

function selectPathOf(node: AstNode): FastExpr | undefined {
  const keys = selectKeys(node);
  return keys === undefined ? undefined : selectPath(keys);
}

/** `ctx.k1.k2...`: the value when every step is a plain record holding the key and the value is JSON-like. */
function selectPath(keys: readonly string[]): FastExpr {
  return (ctx) => {
    if (keys.length === 0) return isPlainRecord(ctx) ? ctx : DEFER; // `ctx` itself must be a map
    const parent = parentOf(ctx, keys, keys.length - 1, false);
    if (parent === DEFER) return DEFER;
    const key = keys[keys.length - 1]!;
    if (!Object.hasOwn(parent, key)) return DEFER;
    const v = parent[key];
    return isJsonLike(v) ? v : DEFER;
  };
}

/** `has(ctx.k1...kn)`: whether the plain record reached by k1..k(n-1) holds kn. */
function hasMacroOf(node: AstNode): FastExpr | undefined {
  if (!Array.isArray(node.args) || node.args[0] !== 'has') return undefined;
  const params: unknown = node.args[1];
  if (!Array.isArray(params) || params.length !== 1) return undefined;
  const target = asNode(params[0]);
  const keys = target?.op === '.' ? selectKeys(target) : undefined;
  if (keys === undefined || keys.length === 0) return undefined;
  const last = keys[keys.length - 1]!;
  return (ctx) => {
    const parent = parentOf(ctx, keys, keys.length - 1, true);
    if (parent === DEFER) return DEFER;
    if (!Object.hasOwn(parent, last)) return false;
    // An own key holding undefined (not JSON) or a value the interpreter may refuse: let it decide.
    return isJsonLike(parent[last]) ? true : DEFER;
  };
}

/**
 * The plain record reached from ctx by the first `depth` keys, or DEFER. The interpreter reads ctx
 * itself, and every object has() looks into, as a declared map (getMapField, which reads a Map by
 * get()); the later steps of a select it reads by constructor alone (fieldAccess). `mapReadAll`
 * says has() is reading, so every step gets the Map test, not only ctx.
 */
function parentOf(
  ctx: unknown,
  keys: readonly string[],
  depth: number,
  mapReadAll: boolean,
): Record<string, unknown> | typeof DEFER {
  const isStep = mapReadAll ? isMapReadRecord : isPlainRecord;
  let at: unknown = ctx;
  if (!isMapReadRecord(at)) return DEFER;
  for (let i = 0; i < depth; i++) {
    const key = keys[i]!;
    if (!Object.hasOwn(at, key)) return DEFER;
    at = at[key];
    if (!isStep(at)) return DEFER;
  }
  return at;
}

/**
 * An object the interpreter types as a map and reads by own key. The interpreter decides by the
 * object's `constructor` alone (Object: a JSON object; undefined: a null-prototype record), so this
 * is the same test, and no stricter one: reading the prototype (Object.getPrototypeOf) would cost
 * more than the rest of a select. JSON data with an own "constructor" key holds a JSON value there,
 * never the Object function, so such an object fails the test and the interpreter (with its retry
 * over Maps) decides. An own "__proto__" data key (JSON.parse makes one) changes neither the
 * object's prototype nor any key read here (the subset never reads "__proto__" itself).
 */
function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const ctor = (v as { constructor?: unknown }).constructor;
  return ctor === Object || ctor === undefined;
}

/**
 * A plain record where the interpreter reads a declared map: it tests `instanceof Map` there before
 * its own-key read, so a Map whose `constructor` was overwritten (only ever made in memory) is read
 * by get(). The test costs about as much as the rest of a step, hence only where it matters.
 */
function isMapReadRecord(v: unknown): v is Record<string, unknown> {
  return isPlainRecord(v) && !(v instanceof Map);
}

/** A value the interpreter returns as it is from a select: a JSON scalar, a plain record or a plain array. */
function isJsonLike(v: unknown): boolean {
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
      return true;
    case 'object':
      if (v === null || isPlainRecord(v)) return true;
      // An array is a list to the interpreter when its constructor is Array (again its own test).
      return Array.isArray(v) && (v as { constructor?: unknown }).constructor === Array;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Comparisons

/** An operand of a comparison or equality: a literal or a ctx select (nothing computed). */
function operandOf(node: AstNode): FastExpr | undefined {
  return node.op === 'value' || node.op === '-_' ? constant(literalOf(node)) : selectPathOf(node);
}

/** An operand of `<` and friends: a number literal (a string or other literal is not taken) or a ctx select. */
function numericOperandOf(node: AstNode): FastExpr | undefined {
  if (node.op !== 'value' && node.op !== '-_') return selectPathOf(node);
  const value = literalOf(node);
  return typeof value === 'number' ? constant(value) : undefined;
}

/** `a < b` and friends on two numbers; NaN and every other type defer. */
function comparisonOf(node: AstNode): FastExpr | undefined {
  const compare = COMPARE[node.op];
  const operands = binaryArgs(node);
  if (compare === undefined || operands === undefined) return undefined;
  const left = numericOperandOf(operands[0]);
  const right = numericOperandOf(operands[1]);
  if (left === undefined || right === undefined) return undefined;
  return (ctx) => {
    const a = left(ctx);
    const b = right(ctx);
    if (typeof a !== 'number' || typeof b !== 'number' || Number.isNaN(a) || Number.isNaN(b)) return DEFER;
    return compare(a, b);
  };
}

/** `a == b` / `a != b` when both are of the same simple kind (number, string, bool, null); else defer. */
function equalityOf(node: AstNode): FastExpr | undefined {
  const operands = binaryArgs(node);
  if (operands === undefined) return undefined;
  const left = operandOf(operands[0]);
  const right = operandOf(operands[1]);
  if (left === undefined || right === undefined) return undefined;
  const negate = node.op === '!=';
  return (ctx) => {
    const a = left(ctx);
    const b = right(ctx);
    if (!sameSimpleKind(a, b)) return DEFER;
    return negate ? a !== b : a === b;
  };
}

function sameSimpleKind(a: unknown, b: unknown): boolean {
  if (a === null || b === null) return a === b;
  const kind = typeof a;
  if (kind !== typeof b) return false;
  if (kind === 'number') return !Number.isNaN(a) && !Number.isNaN(b);
  return kind === 'string' || kind === 'boolean';
}

// ---------------------------------------------------------------------------------------------
// Logic

/**
 * `&&` / `||`. The interpreter evaluates the left side first; when it is the absorbing value
 * (false for &&, true for ||) that is the answer whatever the right side holds. When it is the other
 * boolean, the answer is the right side if that is a boolean. Every other case involves CEL's
 * error absorption and is deferred as a whole.
 */
function logicalOf(node: AstNode): FastExpr | undefined {
  const operands = binaryArgs(node);
  if (operands === undefined) return undefined;
  const left = compileNode(operands[0]);
  const right = compileNode(operands[1]);
  if (left === undefined || right === undefined) return undefined;
  const absorbing = node.op === '||';
  return (ctx) => {
    const l = left(ctx);
    if (l === absorbing) return absorbing;
    if (l !== !absorbing) return DEFER;
    const r = right(ctx);
    return typeof r === 'boolean' ? r : DEFER;
  };
}

function negationOf(node: AstNode): FastExpr | undefined {
  const inner = asNode(node.args);
  const operand = inner === undefined ? undefined : compileNode(inner);
  if (operand === undefined) return undefined;
  return (ctx) => {
    const v = operand(ctx);
    return typeof v === 'boolean' ? !v : DEFER;
  };
}
