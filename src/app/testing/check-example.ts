/**
 * An example's verdict: what it expected against what the run did, as a list of mismatches, each
 * naming where (a status, a header, a path in the body, a queue's message, a step's call) with the
 * expected and the actual value. Empty: the example passes.
 */
import { xmlToExactJson, xmlToJson } from '../../common/xml.js';
import type { ExpectedCall, Expectations } from './example-spec.js';
import type { ExampleRun } from './run-example.js';
import { differences, MISSING, parsePath, shown, valueAt } from './value-paths.js';

export interface Mismatch {
  /** Where: `status`, `headers.x-order-id`, `body$.items[0]`, `published.fulfil-order[0]$.id`, ... */
  readonly what: string;
  readonly expected: string;
  readonly actual: string;
}

export function checkExample(expect: Expectations, run: ExampleRun): Mismatch[] {
  const out: Mismatch[] = [];
  const add = (what: string, expected: unknown, actual: unknown) =>
    out.push({ what, expected: shown(expected), actual: shown(actual) });
  for (const step of run.strayStubs)
    out.push({
      what: `stubs.${step}`,
      expected: 'a step that calls out',
      actual: 'no step of the flow (or a flow it runs) calls out under that name',
    });
  if (run.missingStub !== undefined) {
    out.push({ what: 'stub', expected: 'a stub for every call out', actual: run.missingStub });
    return out;
  }
  if (expect.outcome !== undefined && expect.outcome !== run.outcome) add('outcome', expect.outcome, run.outcome);
  else if (
    expect.outcome === undefined &&
    expect.status === undefined &&
    (run.outcome === 'failed' || run.outcome === 'dead_lettered')
  )
    // A failure nobody expected fails the example even when what it checks happens to hold.
    add('outcome', 'no failure (say outcome: failed to expect one)', `${run.outcome}: ${run.error ?? ''}`);
  if (expect.status !== undefined && expect.status !== run.status) add('status', expect.status, run.status);
  for (const [name, value] of Object.entries(expect.headers ?? {})) {
    const actual = run.headers[name];
    if (actual !== value) add(`headers.${name}`, value, actual ?? MISSING);
  }
  if (expect.body !== undefined) checkBody(expect.body, run, add);
  if (expect.bodyPaths !== undefined) {
    const body = structured(run);
    for (const [path, value] of Object.entries(expect.bodyPaths)) {
      const segments = parsePath(path);
      if (segments === undefined) {
        add(`body_paths.${path}`, 'a path such as $.order.items[0].sku', path);
        continue;
      }
      for (const d of differences(value, valueAt(body, segments)))
        add(`body${pathJoin(path, d.path).slice(1)}`, d.expected, d.actual);
    }
  }
  if (expect.published !== undefined) {
    for (const [queue, want] of Object.entries(expect.published)) {
      const got = run.published[queue] ?? [];
      if (typeof want === 'number') {
        if (want !== got.length) add(`published.${queue}`, `${want} message(s)`, `${got.length} message(s)`);
      } else for (const d of differences(want, got)) add(`published.${queue}${d.path.slice(1)}`, d.expected, d.actual);
    }
    for (const queue of Object.keys(run.published))
      if (!(queue in expect.published))
        add(`published.${queue}`, 'no message', `${run.published[queue]!.length} message(s)`);
  }
  for (const [step, want] of Object.entries(expect.calls ?? {})) {
    const got = run.calls.filter((c) => c.step === step);
    if (typeof want === 'number') {
      if (want !== got.length) add(`calls.${step}`, `${want} call(s)`, `${got.length} call(s)`);
      continue;
    }
    if (want.length !== got.length) add(`calls.${step}`, `${want.length} call(s)`, `${got.length} call(s)`);
    want.forEach((w, i) => {
      const g = got[i];
      if (g !== undefined) checkCall(`calls.${step}[${i}]`, w, g, add);
    });
  }
  if (expect.faultStep !== undefined && expect.faultStep !== run.faultStep)
    add('fault_step', expect.faultStep, run.faultStep ?? MISSING);
  if (expect.rule !== undefined && expect.rule !== run.rule) add('rule', expect.rule, run.rule ?? MISSING);
  if (expect.error !== undefined && !(run.error ?? '').includes(expect.error))
    add('error', `a cause containing ${JSON.stringify(expect.error)}`, run.error ?? MISSING);
  if (expect.steps !== undefined) {
    const i = firstDivergence(expect.steps, run.steps);
    if (i >= 0) add(`steps[${i}]`, expect.steps[i] ?? MISSING, run.steps[i] ?? MISSING);
  }
  if (expect.attempts !== undefined && expect.attempts !== run.attempts)
    add('attempts', expect.attempts, run.attempts ?? MISSING);
  return out;
}

type Add = (what: string, expected: unknown, actual: unknown) => void;

function checkBody(expected: unknown, run: ExampleRun, add: Add): void {
  if (run.bodyKind === 'xml' && typeof expected === 'string') {
    // XML is compared as its markup (root, prefixes, namespaces, attributes, text): layout does not count.
    const want = exactXmlOrText(expected);
    for (const d of differences(want, exactXmlOrText(run.body as string)))
      add(`body${d.path.slice(1)}`, d.expected, d.actual);
    return;
  }
  if (run.bodyKind === 'text' && typeof expected === 'string') {
    if (expected.trimEnd() !== (run.body as string).trimEnd()) add('body', expected, run.body);
    return;
  }
  for (const d of differences(expected, run.body))
    add(`body${d.path === '$' ? '' : d.path.slice(1)}`, d.expected, d.actual);
}

function checkCall(what: string, want: ExpectedCall, got: ExampleRun['calls'][number], add: Add): void {
  if (want.method !== undefined && want.method !== got.method) add(`${what}.method`, want.method, got.method);
  if (want.url !== undefined && want.url !== got.url) add(`${what}.url`, want.url, got.url);
  for (const [name, value] of Object.entries(want.headers ?? {}))
    if (got.headers[name] !== value) add(`${what}.headers.${name}`, value, got.headers[name] ?? MISSING);
  if (want.body !== undefined) {
    const body =
      typeof want.body === 'string' && typeof got.body === 'string' && /^\s*</.test(got.body)
        ? exactXmlOrText(got.body)
        : got.body;
    const expected = typeof want.body === 'string' && /^\s*</.test(want.body) ? exactXmlOrText(want.body) : want.body;
    for (const d of differences(expected, body))
      add(`${what}.body${d.path === '$' ? '' : d.path.slice(1)}`, d.expected, d.actual);
  }
}

/** The body as paths read it: JSON as is, XML as its JSON form (elements as keys). */
function structured(run: ExampleRun): unknown {
  return run.bodyKind === 'xml' ? xmlOrText(run.body as string) : run.body;
}

/** XML as its exact markup tree (root, prefixes, namespaces kept), or the trimmed text when it is not XML. */
function exactXmlOrText(text: string): unknown {
  try {
    return xmlToExactJson(text);
  } catch {
    return text.trim();
  }
}

/** XML in the JSON form paths read (elements as keys, the root dropped), or the trimmed text. */
function xmlOrText(text: string): unknown {
  try {
    return xmlToJson(text);
  } catch {
    return text.trim();
  }
}

function firstDivergence(a: readonly string[], b: readonly string[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** `$.order` + `$.id` -> `$.order.id`, for a difference found below a path's value. */
function pathJoin(base: string, below: string): string {
  const head = base.trim().startsWith('$') ? base.trim() : `$.${base.trim()}`;
  return below === '$' ? head : `${head}${below.slice(1)}`;
}
