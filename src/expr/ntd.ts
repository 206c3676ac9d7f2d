/** `ntd` bodies: JSON, XML or text with `{{ }}` holes, compiled once into a renderer of the step's message. */
import { JSON_MAX_DEPTH, jsonNestsDeeperThan } from '../common/json-depth.js';
import { XmlValue, isXmlValue } from '../common/xml-value.js';
import type { NtdIR } from '../ir/types.js';
import { compileExpr, type CompiledExpr } from './cel.js';
import { checkTemplate, scanTemplate, valueToText, type TemplatePart, type TemplateProblem } from './template.js';

export type CompiledNtd = (ctx: Record<string, unknown>) => unknown;
type Render = (ctx: Record<string, unknown>) => unknown;

/** Decides the body's format by its first non-blank character: `{`/`[` JSON, `<` XML, else text. */
export function detectNtdFormat(body: string): NtdIR['format'] {
  const first = body.trimStart()[0];
  if (first === '{' || first === '[') return 'json';
  if (first === '<') return 'xml';
  return 'text';
}

// Placeholders stand in for holes while the JSON skeleton is parsed once at compile time.
const MARK = '\u0000';
const WHOLE = /^\u0000(\d+)\u0000$/;
const ANY = /\u0000(\d+)\u0000/g;

/**
 * Compiles an ntd body. JSON: a bare hole `{{ x }}` or a quoted whole-string hole `"{{ x }}"`
 * takes the typed value, other holes inside strings interpolate as text (a JS string, so JSON
 * escaping is implicit). XML: holes are XML-escaped (an XmlValue is inserted as markup) and the
 * result is an XmlValue named after its root element. Text: holes interpolate.
 * @throws TemplateSyntaxError / ExprSyntaxError / NtdSyntaxError when the body is malformed
 */
export function compileNtd(ntd: NtdIR): CompiledNtd {
  const problem = checkNtd(ntd);
  if (problem) throw new NtdSyntaxError(problem.message, problem.offset);
  const parts = scanTemplate(ntd.body);
  switch (ntd.format) {
    case 'json':
      return compileJson(parts);
    case 'xml':
      return compileXml(parts);
    default:
      return compileText(parts, valueToText);
  }
}

export class NtdSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'NtdSyntaxError';
  }
}

/** The first problem in an ntd body (bad hole, bad expression, JSON that does not parse or nests too deep) with its offset. */
export function checkNtd(ntd: NtdIR): TemplateProblem | undefined {
  const t = checkTemplate(ntd.body);
  if (t) return t;
  if (ntd.format !== 'json') return undefined;
  const skeleton = jsonSkeleton(scanTemplate(ntd.body)).text;
  try {
    JSON.parse(skeleton);
  } catch (err) {
    return { message: `the JSON body does not parse: ${(err as Error).message}`, offset: 0 };
  }
  // The renderer recurses through the body's structure, and a step's message may not nest deeper anyway.
  if (jsonNestsDeeperThan(Buffer.from(skeleton)))
    return { message: `the JSON body nests deeper than ${JSON_MAX_DEPTH} levels`, offset: 0 };
  return undefined;
}

function jsonSkeleton(parts: TemplatePart[]): { text: string; exprs: string[] } {
  let text = '';
  const exprs: string[] = [];
  let inString = false;
  for (const p of parts) {
    if (p.kind === 'hole') {
      const mark = `\\u0000${exprs.length}\\u0000`;
      exprs.push(p.expr);
      text += inString ? mark : `"${mark}"`;
      continue;
    }
    for (let i = 0; i < p.text.length; i++) {
      const c = p.text[i];
      if (inString && c === '\\') i++;
      else if (c === '"') inString = !inString;
    }
    text += p.text;
  }
  return { text, exprs };
}

function compileJson(parts: TemplatePart[]): CompiledNtd {
  const { text, exprs } = jsonSkeleton(parts);
  const fns = exprs.map((e) => compileExpr(e));
  return build(JSON.parse(text) as unknown, fns);
}

function build(node: unknown, fns: CompiledExpr[]): Render {
  if (typeof node === 'string') return buildString(node, fns);
  if (Array.isArray(node)) {
    const items = node.map((n) => build(n, fns));
    return (ctx) => items.map((r) => r(ctx));
  }
  if (node !== null && typeof node === 'object') {
    const entries = Object.entries(node).map(([k, v]) => [buildString(k, fns), build(v, fns)] as const);
    return (ctx) => {
      const out: Record<string, unknown> = {};
      for (const [k, v] of entries) out[valueToText(k(ctx))] = v(ctx);
      return out;
    };
  }
  return () => node;
}

function buildString(s: string, fns: CompiledExpr[]): Render {
  if (!s.includes(MARK)) return () => s;
  const whole = WHOLE.exec(s);
  if (whole) return fns[Number(whole[1])]!;
  const pieces: Array<string | CompiledExpr> = [];
  let last = 0;
  for (const m of s.matchAll(ANY)) {
    if (m.index > last) pieces.push(s.slice(last, m.index));
    pieces.push(fns[Number(m[1])]!);
    last = m.index + m[0].length;
  }
  if (last < s.length) pieces.push(s.slice(last));
  return (ctx) => {
    let out = '';
    for (const p of pieces) out += typeof p === 'string' ? p : valueToText(p(ctx));
    return out;
  };
}

function compileText(parts: TemplatePart[], toText: (v: unknown) => string): (ctx: Record<string, unknown>) => string {
  const pieces: Array<string | CompiledExpr> = parts.map((p) => (p.kind === 'text' ? p.text : compileExpr(p.expr)));
  return (ctx) => {
    let out = '';
    for (const p of pieces) out += typeof p === 'string' ? p : toText(p(ctx));
    return out;
  };
}

/** Escapes text for XML content and attribute values. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&apos;',
  );
}

const xmlText = (v: unknown): string => (isXmlValue(v) ? v.xml : escapeXml(valueToText(v)));

function compileXml(parts: TemplatePart[]): CompiledNtd {
  const render = compileText(parts, xmlText);
  const head = parts[0]?.kind === 'text' ? parts[0].text : '';
  const staticRoot = rootName(head);
  return (ctx) => {
    const xml = render(ctx).trim();
    return new XmlValue(xml, staticRoot ?? rootName(xml) ?? '');
  };
}

/** The local name of the first element, skipping the XML declaration, comments and a doctype. */
export function rootName(xml: string): string | undefined {
  const m =
    /^\s*(?:(?:<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^>]*>)\s*)*<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)[\s/>]/.exec(
      xml,
    );
  return m?.[1];
}
