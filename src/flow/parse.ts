/** `.flow.md` / `.lib.md` text -> syntax tree with line numbers (front matter, steps, fences, fault). Pure. */
import { LineCounter, parseDocument, isMap, isScalar, type Node } from 'yaml';
import { FlowErrorCode, formatMessage, type OnError } from './diagnostics.js';

/** One `key: value` of a YAML block, with the 1-based line of its key. */
export interface KeyEntry {
  key: string;
  value: unknown;
  line: number;
  /** Set on entries expanded from a library: the file they were written in. */
  file?: string;
}

export type FenceKind = 'validate' | 'ntd' | 'condition';

export interface FenceNode {
  kind: FenceKind;
  /** Line of the opening ``` fence. */
  line: number;
  /** The body lines with their 1-based line numbers. */
  lines: { text: string; line: number }[];
  /** Set on fences expanded from a library: the file they were written in. */
  file?: string;
}

export interface StepNode {
  name: string;
  line: number;
  keys: KeyEntry[];
  fences: FenceNode[];
  /** Set when the step was expanded from a library (`use:`): the library file its keys come from. */
  file?: string;
}

export interface FaultNode {
  name: string;
  line: number;
  /** The fault heading's own body (keys and fences under `## Fault:`), when it has any. */
  body: StepNode;
  steps: StepNode[];
}

export interface FlowDoc {
  file: string;
  /** Undefined when the file has no front matter (allowed for libraries). */
  frontMatter?: KeyEntry[];
  frontMatterLine: number;
  steps: StepNode[];
  /** Every `## Fault:` section in order; more than one is a publication error. */
  faults: FaultNode[];
}

const STEP_HEADING = /^##[ \t]+Step:[ \t]*(.*?)[ \t]*#*[ \t]*$/;
const FAULT_HEADING = /^##[ \t]+Fault:[ \t]*(.*?)[ \t]*#*[ \t]*$/;
const OTHER_HEADING = /^#{1,2}[ \t]/;
const EXAMPLE_HEADING = /^#{2,3}[ \t]+Example:/;
const FENCE_OPEN = /^[ ]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)/;
const KEY_LINE = /^[A-Za-z_][\w-]*[ \t]*:/;
const CONSTRUCTS: ReadonlySet<string> = new Set(['validate', 'ntd', 'condition']);

export interface ParseOptions {
  /** Libraries may omit front matter. @default true */
  requireFrontMatter?: boolean;
}

/** Parses a flow (or library) file; every problem goes to onError and parsing carries on. */
export function parseFlowDoc(text: string, file: string, onError: OnError, opts: ParseOptions = {}): FlowDoc {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const doc: FlowDoc = { file, frontMatterLine: 1, steps: [], faults: [] };
  const err = (
    code: FlowErrorCode,
    line: number,
    step: string,
    args: Record<string, string | number> = {},
    column = 1,
  ) => onError({ code, message: formatMessage(code, args), file, line, column, step });

  let i = 0;
  if (lines[0]?.trim() === '---') {
    const end = lines.findIndex((l, idx) => idx > 0 && l.trim() === '---');
    if (end < 0) {
      err(FlowErrorCode.FRONT_MATTER_MISSING, 1, 'front matter');
      return doc;
    }
    const block = lines.slice(1, end);
    // Empty (a "---" doubled, say): one error, not a "missing key" per required key.
    if (block.every((l) => l.trim() === '') && (opts.requireFrontMatter ?? true))
      err(FlowErrorCode.FRONT_MATTER_EMPTY, 1, 'front matter', { end: end + 1 });
    else doc.frontMatter = parseKeyBlock(block, 2, 'front matter', 'the front matter', file, onError);
    i = end + 1;
  } else if (opts.requireFrontMatter ?? true) {
    err(FlowErrorCode.FRONT_MATTER_MISSING, 1, 'front matter');
  }

  let current: StepNode | undefined; // where fences and keys go
  let fault: FaultNode | undefined;
  const openSection = (node: StepNode): void => {
    current = node;
    // The key block: the first paragraph under the heading, when it looks like "key:" lines.
    let j = i;
    while (j < lines.length && lines[j]!.trim() === '') j++;
    if (j < lines.length && KEY_LINE.test(lines[j]!)) {
      const start = j;
      while (j < lines.length && lines[j]!.trim() !== '' && !FENCE_OPEN.test(lines[j]!) && !isHeading(lines[j]!)) j++;
      node.keys =
        parseKeyBlock(lines.slice(start, j), start + 1, node.name, `the keys of step "${node.name}"`, file, onError) ??
        [];
      i = j;
    }
  };

  while (i < lines.length) {
    const line = lines[i]!;
    const lineNo = i + 1;
    const fence = FENCE_OPEN.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const info = fence[2]!.toLowerCase();
      const close = findFenceClose(lines, i + 1, marker);
      if (CONSTRUCTS.has(info)) {
        const step = current?.name ?? 'front matter';
        // A construct never holds a step heading or another construct's fence: one inside means
        // this fence was left open (its close, if any, is that later block's). Said once, here,
        // and the text from there on is read as what it is, not as this construct's lines.
        const cut = openedInside(lines, i + 1, close < 0 ? lines.length : close);
        if (cut >= 0) {
          err(FlowErrorCode.FENCE_NOT_CLOSED_BEFORE, lineNo, step, {
            fence: info,
            marker,
            what: lines[cut]!.trim(),
            at: cut + 1,
          });
          i = cut;
          continue;
        }
        if (close < 0) {
          err(FlowErrorCode.UNCLOSED_FENCE, lineNo, step, { fence: info, marker });
          break;
        }
        const body = lines.slice(i + 1, close).map((text, k) => ({ text, line: lineNo + 1 + k }));
        if (!current) err(FlowErrorCode.FENCE_OUTSIDE_STEP, lineNo, step, { fence: info });
        else if (current.fences.some((f) => f.kind === info))
          err(FlowErrorCode.DUPLICATE_FENCE, lineNo, step, { fence: info });
        else current.fences.push({ kind: info as FenceKind, line: lineNo, lines: body });
      }
      i = close < 0 ? lines.length : close + 1;
      continue;
    }
    const stepHead = STEP_HEADING.exec(line);
    const faultHead = stepHead ? null : FAULT_HEADING.exec(line);
    i++;
    if (stepHead) {
      const node: StepNode = { name: stepHead[1]!, line: lineNo, keys: [], fences: [] };
      (fault ? fault.steps : doc.steps).push(node);
      openSection(node);
    } else if (faultHead) {
      const name = faultHead[1]!;
      fault = { name, line: lineNo, body: { name, line: lineNo, keys: [], fences: [] }, steps: [] };
      doc.faults.push(fault);
      openSection(fault.body);
    } else if (OTHER_HEADING.test(line)) {
      // A prose heading ends the step: fences under it are documentation.
      current = undefined;
    }
  }
  return doc;
}

function isHeading(line: string): boolean {
  return STEP_HEADING.test(line) || FAULT_HEADING.test(line) || OTHER_HEADING.test(line);
}

/**
 * The first line in [from, to) that opens a step, the fault section, an example (docs/testing.md:
 * its fences are never a construct's close) or a construct fence; -1 when none does.
 */
function openedInside(lines: string[], from: number, to: number): number {
  for (let k = from; k < to; k++) {
    const line = lines[k]!;
    if (STEP_HEADING.test(line) || FAULT_HEADING.test(line) || EXAMPLE_HEADING.test(line)) return k;
    const fence = FENCE_OPEN.exec(line);
    if (fence && CONSTRUCTS.has(fence[2]!.toLowerCase())) return k;
  }
  return -1;
}

function findFenceClose(lines: string[], from: number, marker: string): number {
  const ch = marker[0]!;
  for (let k = from; k < lines.length; k++) {
    const t = lines[k]!.trim();
    if (t.length >= marker.length && t === ch.repeat(t.length)) return k;
  }
  return -1;
}

/** Parses YAML lines (the first at `firstLine`) into key entries with their own lines. */
function parseKeyBlock(
  block: string[],
  firstLine: number,
  step: string,
  what: string,
  file: string,
  onError: OnError,
): KeyEntry[] | undefined {
  const src = block.join('\n');
  if (src.trim() === '') return [];
  const counter = new LineCounter();
  const yamlDoc = parseDocument(src, { lineCounter: counter, uniqueKeys: true, prettyErrors: false });
  if (yamlDoc.errors.length > 0) {
    // The first error only, at YAML's own line and column: one bracket made YAML report six.
    const e = yamlDoc.errors[0]!;
    const pos = counter.linePos(e.pos[0]);
    onError({
      code: FlowErrorCode.YAML_SYNTAX,
      message: formatMessage(FlowErrorCode.YAML_SYNTAX, { detail: e.message.split('\n')[0]!, column: pos.col }),
      file,
      line: firstLine + pos.line - 1,
      column: pos.col,
      step,
    });
    return undefined;
  }
  const contents = yamlDoc.contents as Node | null;
  if (!isMap(contents)) {
    onError({
      code: FlowErrorCode.NOT_A_MAPPING,
      message: formatMessage(FlowErrorCode.NOT_A_MAPPING, { what }),
      file,
      line: firstLine,
      column: 1,
      step,
    });
    return undefined;
  }
  let js: Record<string, unknown>;
  try {
    js = yamlDoc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  } catch (e) {
    onError({
      code: FlowErrorCode.YAML_SYNTAX,
      message: formatMessage(FlowErrorCode.YAML_SYNTAX, { detail: (e as Error).message.split('\n')[0]!, column: 1 }),
      file,
      line: firstLine,
      column: 1,
      step,
    });
    return undefined;
  }
  const out: KeyEntry[] = [];
  for (const pair of contents.items) {
    const keyNode = pair.key as Node | null;
    const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode);
    const offset = keyNode?.range?.[0] ?? 0;
    out.push({ key, value: js[key] ?? null, line: firstLine + counter.linePos(offset).line - 1 });
  }
  return out;
}
