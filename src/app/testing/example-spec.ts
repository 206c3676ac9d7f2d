/**
 * An example's spec: the YAML block of an `## Example:` section (docs/testing.md), checked key by
 * key. An unknown key, or a value of the wrong kind, is a problem naming the key and its line,
 * never ignored: a mistyped `expect.stauts` must not make an example pass by checking nothing.
 */
import { durationMs } from '../../common/duration.js';

/** One answer of a stubbed call out. */
export type StubAnswer =
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly headers: Record<string, string>;
      readonly body: unknown;
    }
  | { readonly kind: 'refused' }
  | { readonly kind: 'timeout' };

/** How the example arrives: a /run request (the default), an /enqueue submission and its deliveries, or a cron tick. */
export type ExampleDoor = 'run' | 'enqueue' | 'cron';

export const OUTCOMES = ['completed', 'fault_handled', 'refused', 'failed', 'filtered', 'dead_lettered'] as const;
export type ExampleOutcome = (typeof OUTCOMES)[number];

/** What one recorded call out is expected to have sent (each field optional, headers a subset). */
export interface ExpectedCall {
  readonly method?: string;
  readonly url?: string;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
}

export interface Expectations {
  readonly status?: number;
  /** A subset: each named header (lowercase) with exactly this value. */
  readonly headers?: Record<string, string>;
  /** The whole body (JSON compared as values, XML as its elements, text as text). */
  readonly body?: unknown;
  /** A subset of the body: JSONPath-like path (`$.order.id`, `items[0].sku`) -> value. */
  readonly bodyPaths?: Record<string, unknown>;
  /** Per target queue, the messages queue_publish put there in order (or how many). Queues not named got none. */
  readonly published?: Record<string, readonly unknown[] | number>;
  /** Per step, the calls it made (or how many). */
  readonly calls?: Record<string, readonly ExpectedCall[] | number>;
  readonly outcome?: ExampleOutcome;
  /** The step that failed (a failure answered, handled by the fault section, or dead-lettered). */
  readonly faultStep?: string;
  /** The validate rule that refused the input (its message). */
  readonly rule?: string;
  /** Text the failure's cause contains. */
  readonly error?: string;
  /** The steps that ran, in order (the fault section's included). */
  readonly steps?: readonly string[];
  /** Queue: delivery attempts made. */
  readonly attempts?: number;
}

/** How one delivery arrives: its door, body, headers and correlation id. */
export interface DeliverySpec {
  readonly door: ExampleDoor;
  /** The body as sent: a JSON value, or text (XML, a SOAP envelope) with its content type. */
  readonly input: unknown;
  readonly contentType: string | undefined;
  readonly headers: Record<string, string>;
  readonly correlationId: string | undefined;
}

/**
 * What happens next in the same example (`then:`): the clock moves on by `afterMs` (a correlation
 * past its deadline times out), then another delivery arrives, if one is given, and `expect` is
 * checked against what that step did. The flow state (deduplication, correlations) and the stubs
 * carry over from the steps before.
 */
export interface LaterStep {
  readonly afterMs: number;
  /** Undefined: only time passes. */
  readonly delivery: DeliverySpec | undefined;
  readonly expect: Expectations;
}

/** The first delivery (its door, input, headers) and what surrounds the whole example. */
export interface ExampleSpec extends DeliverySpec {
  /** Epoch milliseconds of `now()`. */
  readonly nowMs: number;
  readonly config: Record<string, string>;
  readonly secrets: Record<string, string>;
  readonly env: Record<string, string>;
  /** Per step, its answers in call order; the last one answers every call after. */
  readonly stubs: Record<string, readonly StubAnswer[]>;
  readonly expect: Expectations;
  /** Skipped, with the reason given (true: none). */
  readonly skip: string | undefined;
  /** Places a recording left masked (recorded-example.ts): the example fails until they are filled in and this is removed. */
  readonly masked: readonly string[];
  /** Later deliveries and the passing of time, in order (`then:`). */
  readonly then: readonly LaterStep[];
}

/** A problem with the spec, at a line of the file when known. */
export interface SpecProblem {
  readonly message: string;
  readonly line?: number;
}

/** The instant of `now()` when an example names none. */
export const DEFAULT_NOW = '2026-01-01T00:00:00.000Z';

const TOP_KEYS = [
  'door',
  'input',
  'content_type',
  'headers',
  'correlation_id',
  'now',
  'config',
  'secrets',
  'env',
  'stubs',
  'expect',
  'skip',
  'masked',
  'then',
] as const;
const LATER_KEYS = ['after', 'door', 'input', 'content_type', 'headers', 'correlation_id', 'expect'] as const;
/** Keys of a later step that make it a delivery (without any, only time passes). */
const DELIVERY_KEYS = ['door', 'input', 'content_type', 'headers', 'correlation_id'] as const;
const EXPECT_KEYS = [
  'status',
  'headers',
  'body',
  'body_paths',
  'published',
  'calls',
  'outcome',
  'fault_step',
  'rule',
  'error',
  'steps',
  'attempts',
] as const;
const STUB_KEYS = ['status', 'headers', 'body', 'refused', 'timeout'] as const;
const CALL_KEYS = ['method', 'url', 'headers', 'body'] as const;

/** Reads a spec; `lineOf(path)` gives the file line of a key (path of keys from the block's top). */
export function readExampleSpec(
  raw: unknown,
  lineOf: (path: readonly (string | number)[]) => number | undefined,
): { spec?: ExampleSpec; problems: SpecProblem[] } {
  const problems: SpecProblem[] = [];
  const problem = (path: readonly (string | number)[], message: string): undefined => {
    problems.push({ message: `${path.join('.')}: ${message}`, line: lineOf(path) });
    return undefined;
  };
  if (!isMap(raw)) return { problems: [{ message: 'the example block must be a YAML mapping of "key: value" lines' }] };
  unknownKeys(raw, TOP_KEYS, [], problem);

  const nowText = raw.now ?? DEFAULT_NOW;
  const nowMs = typeof nowText === 'string' || nowText instanceof Date ? new Date(nowText).getTime() : NaN;
  if (!Number.isFinite(nowMs)) problem(['now'], `must be an ISO 8601 instant such as ${DEFAULT_NOW}`);
  const skip = raw.skip === undefined || raw.skip === false ? undefined : raw.skip === true ? '' : String(raw.skip);

  const stubs: Record<string, StubAnswer[]> = {};
  if (raw.stubs !== undefined) {
    if (!isMap(raw.stubs)) problem(['stubs'], 'must map step names to their answers');
    else
      for (const [step, value] of Object.entries(raw.stubs)) {
        const list = Array.isArray(value) ? value : [value];
        if (list.length === 0) problem(['stubs', step], 'an empty list answers nothing; give at least one answer');
        const answers = list.map((v, i) =>
          readStub(v, Array.isArray(value) ? ['stubs', step, i] : ['stubs', step], problem),
        );
        if (answers.every((a) => a !== undefined)) stubs[step] = answers as StubAnswer[];
      }
  }

  const expect = raw.expect === undefined ? {} : readExpect(raw.expect, problem);
  if (raw.expect === undefined) problem(['expect'], 'is missing: an example checks at least one thing');
  const spec: ExampleSpec = {
    ...readDelivery(raw, [], problem),
    nowMs,
    config: textMap(raw.config, ['config'], problem),
    secrets: textMap(raw.secrets, ['secrets'], problem),
    env: textMap(raw.env, ['env'], problem),
    stubs,
    expect: expect ?? {},
    skip,
    masked: Array.isArray(raw.masked) ? raw.masked.map(String) : [],
    then: readThen(raw.then, problem),
  };
  if (raw.masked !== undefined && !Array.isArray(raw.masked)) problem(['masked'], 'must be a list of places');
  return problems.length > 0 ? { problems } : { spec, problems };
}

type Problem = (path: readonly (string | number)[], message: string) => undefined;

function readDoor(value: unknown, path: (string | number)[], problem: Problem): ExampleDoor {
  const door = value ?? 'run';
  if (door === 'run' || door === 'enqueue' || door === 'cron') return door;
  problem(path, 'must be run, enqueue or cron');
  return 'run';
}

function readDelivery(raw: Record<string, unknown>, path: (string | number)[], problem: Problem): DeliverySpec {
  return {
    door: readDoor(raw.door, [...path, 'door'], problem),
    input: raw.input === undefined ? null : plain(raw.input),
    contentType: optionalText(raw.content_type, [...path, 'content_type'], problem),
    headers: textMap(raw.headers, [...path, 'headers'], problem, true),
    correlationId: optionalText(raw.correlation_id, [...path, 'correlation_id'], problem),
  };
}

function readThen(value: unknown, problem: Problem): LaterStep[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    problem(['then'], 'must be a list of later steps (after, a delivery, expect)');
    return [];
  }
  return value.map((item, i): LaterStep => {
    const path = ['then', i];
    if (!isMap(item)) {
      problem(path, 'must be a mapping of after, a delivery (door, input, headers, ...) and expect');
      return { afterMs: 0, delivery: undefined, expect: {} };
    }
    unknownKeys(item, LATER_KEYS, path, problem);
    let afterMs = 0;
    if (item.after !== undefined) {
      const ms = typeof item.after === 'string' ? durationMs(item.after) : undefined;
      if (ms === undefined) problem([...path, 'after'], 'must be a duration such as 90s, 15m, 2h or 1d');
      else afterMs = ms;
    }
    if (item.expect === undefined)
      problem([...path, 'expect'], 'is missing: each later step checks at least one thing');
    const delivers = DELIVERY_KEYS.some((k) => item[k] !== undefined);
    return {
      afterMs,
      delivery: delivers ? readDelivery(item, path, problem) : undefined,
      expect: (item.expect === undefined ? undefined : readExpect(item.expect, problem, [...path, 'expect'])) ?? {},
    };
  });
}

function readStub(value: unknown, path: (string | number)[], problem: Problem): StubAnswer | undefined {
  if (value === 'refused' || value === 'timeout') return { kind: value };
  if (!isMap(value)) return problem(path, 'must be "refused", "timeout" or a mapping of status, headers and body');
  unknownKeys(value, STUB_KEYS, path, problem);
  if (value.refused === true) return { kind: 'refused' };
  if (value.timeout === true) return { kind: 'timeout' };
  const status = value.status ?? 200;
  if (!Number.isInteger(status) || (status as number) < 100 || (status as number) > 599)
    return problem([...path, 'status'], 'must be an HTTP status 100-599');
  return {
    kind: 'response',
    status: status as number,
    headers: textMap(value.headers, [...path, 'headers'], problem, true),
    body: value.body === undefined ? null : plain(value.body),
  };
}

function readExpect(
  value: unknown,
  problem: Problem,
  path: (string | number)[] = ['expect'],
): Expectations | undefined {
  if (!isMap(value)) return problem(path, 'must be a mapping of what to check');
  unknownKeys(value, EXPECT_KEYS, path, problem);
  if (Object.keys(value).length === 0) problem(path, 'is empty: an example checks at least one thing');
  const status = value.status;
  if (status !== undefined && (!Number.isInteger(status) || (status as number) < 100 || (status as number) > 599))
    problem([...path, 'status'], 'must be an HTTP status 100-599');
  const outcome = value.outcome;
  if (outcome !== undefined && !(OUTCOMES as readonly unknown[]).includes(outcome))
    problem([...path, 'outcome'], `must be one of ${OUTCOMES.join(', ')}`);
  const steps = value.steps;
  if (steps !== undefined && (!Array.isArray(steps) || !steps.every((s) => typeof s === 'string')))
    problem([...path, 'steps'], 'must be a list of step names');
  const attempts = value.attempts;
  if (attempts !== undefined && (!Number.isInteger(attempts) || (attempts as number) < 1))
    problem([...path, 'attempts'], 'must be a whole number of attempts, 1 or more');
  let bodyPaths: Record<string, unknown> | undefined;
  if (value.body_paths !== undefined) {
    if (!isMap(value.body_paths)) problem([...path, 'body_paths'], 'must map paths such as $.order.id to values');
    else bodyPaths = plain(value.body_paths) as Record<string, unknown>;
  }
  return {
    status: status as number | undefined,
    headers: value.headers === undefined ? undefined : textMap(value.headers, [...path, 'headers'], problem, true),
    body: value.body === undefined ? undefined : plain(value.body),
    bodyPaths,
    published: listsOrCounts(value.published, [...path, 'published'], problem, (m) => plain(m)),
    calls: listsOrCounts(value.calls, [...path, 'calls'], problem, (c, p) => readCall(c, p, problem)),
    outcome: outcome as ExampleOutcome | undefined,
    faultStep: optionalText(value.fault_step, [...path, 'fault_step'], problem),
    rule: optionalText(value.rule, [...path, 'rule'], problem),
    error: optionalText(value.error, [...path, 'error'], problem),
    steps: steps as string[] | undefined,
    attempts: attempts as number | undefined,
  };
}

function readCall(value: unknown, path: (string | number)[], problem: Problem): ExpectedCall {
  if (!isMap(value)) {
    problem(path, 'must be a mapping of method, url, headers and body');
    return {};
  }
  unknownKeys(value, CALL_KEYS, path, problem);
  return {
    method: optionalText(value.method, [...path, 'method'], problem)?.toUpperCase(),
    url: optionalText(value.url, [...path, 'url'], problem),
    headers: value.headers === undefined ? undefined : textMap(value.headers, [...path, 'headers'], problem, true),
    body: value.body === undefined ? undefined : plain(value.body),
  };
}

function listsOrCounts<T>(
  value: unknown,
  path: (string | number)[],
  problem: Problem,
  item: (v: unknown, path: (string | number)[]) => T,
): Record<string, readonly T[] | number> | undefined {
  if (value === undefined) return undefined;
  if (!isMap(value)) return problem(path, 'must map names to a list, or to a count');
  const out: Record<string, readonly T[] | number> = {};
  for (const [name, v] of Object.entries(value)) {
    if (Number.isInteger(v) && (v as number) >= 0) out[name] = v as number;
    else if (Array.isArray(v)) out[name] = v.map((x, i) => item(x, [...path, name, i]));
    else problem([...path, name], 'must be a list, or a count');
  }
  return out;
}

function unknownKeys(
  map: Record<string, unknown>,
  known: readonly string[],
  path: readonly (string | number)[],
  problem: Problem,
): void {
  for (const key of Object.keys(map))
    if (!known.includes(key)) problem([...path, key], `unknown key; known here: ${known.join(', ')}`);
}

function optionalText(value: unknown, path: (string | number)[], problem: Problem): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return problem(path, 'must be text');
}

/** A map of names to text values (numbers and booleans as written); header names lowercased. */
function textMap(
  value: unknown,
  path: (string | number)[],
  problem: Problem,
  lowercaseKeys = false,
): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isMap(value)) {
    problem(path, 'must be a mapping of names to values');
    return {};
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    const text = optionalText(v, [...path, k], problem);
    if (text !== undefined) out[lowercaseKeys ? k.toLowerCase() : k] = text;
  }
  return out;
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** A YAML value as JSON would hold it (a YAML timestamp becomes its ISO text). */
function plain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v ?? null)) as unknown;
}
