/**
 * The examples of a Markdown file (a `.flow.md` or its `.test.md` suite): each `## Example: <name>`
 * section holds one YAML block (the spec) and, optionally, fences that carry a body in its own
 * language: ```` ```xml input ````, ```` ```json stub <step> ````, ```` ```xml expect body ````.
 * Pure: text in, examples and problems out. The compiler reads none of it (a prose heading ends a
 * step), so examples change neither the artifact nor its hash.
 */
import { LineCounter, parseDocument, isNode, type Node } from 'yaml';
import { readExampleSpec, type ExampleSpec, type SpecProblem, type StubAnswer } from './example-spec.js';

export interface Example {
  readonly name: string;
  readonly file: string;
  /** The line of its heading. */
  readonly line: number;
  readonly spec: ExampleSpec;
}

export interface ExampleProblem {
  readonly file: string;
  readonly line: number;
  readonly example: string;
  readonly message: string;
}

const EXAMPLE_HEADING = /^(#{2,3})[ \t]+Example:[ \t]*(.*?)[ \t]*#*[ \t]*$/;
const HEADING = /^(#{1,6})[ \t]/;
const FENCE_OPEN = /^[ ]{0,3}(`{3,}|~{3,})[ \t]*(.*)$/;

interface Fence {
  readonly words: string[];
  readonly line: number;
  readonly text: string;
}

interface Section {
  readonly name: string;
  readonly line: number;
  readonly fences: Fence[];
}

/** Every example of `text`, and every problem (a section without a spec, a spec that does not read). */
export function parseExamples(text: string, file: string): { examples: Example[]; problems: ExampleProblem[] } {
  const examples: Example[] = [];
  const problems: ExampleProblem[] = [];
  const names = new Set<string>();
  for (const section of sectionsOf(text.replace(/^\uFEFF/, '').split(/\r?\n/))) {
    const fail = (message: string, line = section.line) =>
      problems.push({ file, line, example: section.name, message });
    if (section.name === '') {
      fail('an example needs a name after "Example:"');
      continue;
    }
    if (names.has(section.name)) {
      fail(`two examples of this file are named "${section.name}"; names must differ, so a result names one`);
      continue;
    }
    names.add(section.name);
    const specs = section.fences.filter((f) => isSpecFence(f.words));
    if (specs.length !== 1) {
      fail(
        specs.length === 0
          ? 'no ```yaml block: an example is a YAML block of input, stubs and expect'
          : `${specs.length} \`\`\`yaml blocks; an example has one`,
        specs[1]?.line ?? section.line,
      );
      continue;
    }
    const read = readSpec(specs[0]!);
    const own: SpecProblem[] = [...read.problems];
    let spec = read.spec;
    for (const fence of section.fences) {
      if (spec === undefined || isSpecFence(fence.words)) continue;
      const placed = placeBody(spec, fence);
      if (typeof placed === 'string') own.push({ message: placed, line: fence.line });
      else spec = placed;
    }
    if (own.length > 0 || spec === undefined) {
      for (const p of own) fail(p.message, p.line ?? specs[0]!.line);
      continue;
    }
    examples.push({ name: section.name, file, line: section.line, spec });
  }
  return { examples, problems };
}

function isSpecFence(words: readonly string[]): boolean {
  const lang = words[0]?.toLowerCase();
  return (lang === 'yaml' || lang === 'yml') && (words.length === 1 || words[1] === 'example');
}

/** The example sections, with the fences inside each (fences elsewhere, and headings inside fences, are skipped). */
function sectionsOf(lines: string[]): Section[] {
  const sections: Section[] = [];
  let current: (Section & { level: number }) | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const open = FENCE_OPEN.exec(line);
    if (open) {
      const marker = open[1]!;
      let end = i + 1;
      while (end < lines.length && !closes(lines[end]!, marker)) end++;
      current?.fences.push({
        words: open[2]!
          .trim()
          .split(/\s+/)
          .filter((w) => w !== ''),
        line: i + 1,
        text: lines.slice(i + 1, end).join('\n'),
      });
      i = end;
      continue;
    }
    const example = EXAMPLE_HEADING.exec(line);
    if (example) {
      current = { name: example[2]!, line: i + 1, fences: [], level: example[1]!.length };
      sections.push(current);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading && current !== undefined && heading[1]!.length <= current.level) current = undefined;
  }
  return sections;
}

function closes(line: string, marker: string): boolean {
  const t = line.trim();
  return t.length >= marker.length && t === marker[0]!.repeat(t.length);
}

function readSpec(fence: Fence): { spec?: ExampleSpec; problems: SpecProblem[] } {
  const counter = new LineCounter();
  const doc = parseDocument(fence.text, { lineCounter: counter, uniqueKeys: true });
  const firstLine = fence.line + 1;
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const at = e.linePos?.[0];
    return {
      problems: [
        {
          message: `YAML does not parse${at ? ` (column ${at.col})` : ''}: ${e.message.split('\n')[0]}`,
          line: at ? firstLine + at.line - 1 : firstLine,
        },
      ],
    };
  }
  const lineOf = (path: readonly (string | number)[]): number | undefined => {
    for (let n = path.length; n > 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as unknown;
      const range = isNode(node) ? (node as Node).range : undefined;
      if (range) return firstLine + counter.linePos(range[0]).line - 1;
    }
    return fence.line;
  };
  return readExampleSpec(doc.toJS({ maxAliasCount: 100 }), lineOf);
}

/** Puts a body fence's text where its words say; a string is the problem with it. */
function placeBody(spec: ExampleSpec, fence: Fence): ExampleSpec | string {
  const [lang = '', role, ...rest] = fence.words;
  const json = lang.toLowerCase() === 'json';
  let value: unknown = fence.text;
  if (json) {
    try {
      value = JSON.parse(fence.text);
    } catch (err) {
      return `the \`\`\`json ${role ?? ''} block is not JSON: ${(err as Error).message}`;
    }
  }
  const xmlType = lang.toLowerCase() === 'xml' ? 'application/xml' : undefined;
  if (role === 'input' && rest.length === 0) {
    if (spec.input !== null) return 'the input is given twice (the YAML block has input: too)';
    return { ...spec, input: value, contentType: spec.contentType ?? xmlType };
  }
  if (role === 'expect' && rest.length === 1 && rest[0] === 'body') {
    if (spec.expect.body !== undefined) return 'the expected body is given twice (expect.body in the YAML block too)';
    return { ...spec, expect: { ...spec.expect, body: value } };
  }
  if (role === 'stub' && rest.length === 1) {
    const step = rest[0]!;
    const given = spec.stubs[step];
    if (given !== undefined && (given.length !== 1 || given[0]!.kind !== 'response' || given[0]!.body !== null))
      return `the body of step "${step}"'s stub is given twice (stubs.${step} in the YAML block has one, or several answers)`;
    const first = given?.[0] as Extract<StubAnswer, { kind: 'response' }> | undefined;
    const headers = { ...(first?.headers ?? {}) };
    if (xmlType !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'text/xml';
    const answer: StubAnswer = { kind: 'response', status: first?.status ?? 200, headers, body: value };
    return { ...spec, stubs: { ...spec.stubs, [step]: [answer] } };
  }
  // Any other fence is documentation, as anywhere in a flow file.
  return spec;
}
