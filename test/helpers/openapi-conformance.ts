/**
 * Holds real answers of the server against its OpenAPI document: the status is documented for
 * the operation, the documented headers are there (required ones always) and conform, the headers
 * the service itself sets are documented, the Content-Type is one the document lists and the body
 * fits that media type's schema. Records what was seen, so a test can ask what was never provoked.
 */
import assert from 'node:assert/strict';
import { deref, mediaTypeMatches } from './openapi-check.js';
import { valueProblems, type Schema } from './json-schema-subset.js';
import type { RawResponse } from './raw-http.js';

export interface Answer {
  readonly status: number;
  /** Lowercase names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** Headers the service sets itself (never the flow): each one sent must be documented on that answer. */
const SERVICE_HEADER = /^(www-authenticate|retry-after|x-ratelimit-[a-z]+|x-svc-[a-z-]+|etag|cache-control)$/;

type Obj = Record<string, unknown>;

/** An Answer from what rawRequest collected (the head parsed into lowercase headers). */
export function answerFromRaw(res: RawResponse): Answer {
  const headers: Record<string, string> = {};
  for (const line of res.head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: res.status, headers, body: res.body };
}

function headerValue(answer: Answer, name: string): string | undefined {
  const v = answer.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

export class ConformanceChecker {
  readonly #doc: Obj;
  /** `METHOD /path status` of every answer checked. */
  readonly seen = new Set<string>();
  /** `METHOD /path status media-type` of every answer with a body. */
  readonly seenMedia = new Set<string>();

  constructor(doc: unknown) {
    this.#doc = doc as Obj;
  }

  #resolve = (ref: string): Schema => deref<Schema>(this.#doc, { $ref: ref });

  operation(method: string, path: string): Obj | undefined {
    const item = (this.#doc.paths as Record<string, Obj | undefined>)[path];
    return item?.[method.toLowerCase()] as Obj | undefined;
  }

  /** Asserts `answer` is what the document says `method path` answers under `statusKey` (a status or `default`). */
  check(method: string, path: string, statusKey: string, answer: Answer): void {
    const where = `${method} ${path}`;
    const op = this.operation(method, path);
    assert.ok(op, `${where} is not in the document`);
    const responses = op.responses as Record<string, unknown>;
    const key = String(answer.status) in responses ? String(answer.status) : 'default';
    assert.equal(
      key,
      statusKey,
      `${where} answered ${answer.status}, documented under "${key in responses ? key : 'nothing'}": ${answer.body.slice(0, 300)}`,
    );
    assert.ok(key in responses, `${where}: status ${answer.status} is not documented`);
    const response = deref<Obj>(this.#doc, responses[key]);
    const documented = new Map(
      Object.entries((response.headers as Obj | undefined) ?? {}).map(([name, h]) => [
        name.toLowerCase(),
        deref<Obj>(this.#doc, h),
      ]),
    );
    for (const [name, header] of documented) {
      const value = headerValue(answer, name);
      if (header.required === true)
        assert.ok(value !== undefined, `${where} ${key}: the required header ${name} is missing`);
      if (value !== undefined)
        assert.deepEqual(
          valueProblems(header.schema as Schema, value, this.#resolve),
          [],
          `${where} ${key}: header ${name}`,
        );
    }
    for (const name of Object.keys(answer.headers)) {
      if (SERVICE_HEADER.test(name))
        assert.ok(
          documented.has(name),
          `${where} ${key}: sends ${name}, which the document does not list for this answer`,
        );
    }
    this.seen.add(`${where} ${key}`);
    if (method === 'HEAD' || response.content === undefined) {
      assert.equal(
        answer.body,
        '',
        `${where} ${key}: documented without a body, answered ${answer.body.slice(0, 200)}`,
      );
      return;
    }
    const contentType = headerValue(answer, 'content-type');
    assert.ok(contentType !== undefined, `${where} ${key}: a body without Content-Type`);
    const content = response.content as Record<string, { schema: Schema }>;
    const media = Object.keys(content).find((m) => mediaTypeMatches(m, contentType));
    assert.ok(
      media !== undefined,
      `${where} ${key}: Content-Type ${contentType} is not among the documented ${Object.keys(content).join(', ')}`,
    );
    const isJson = /\/([\w.-]+\+)?json$/.test(media.split(';', 1)[0]!.trim());
    let value: unknown = answer.body;
    if (isJson) {
      assert.doesNotThrow(
        () => (value = JSON.parse(answer.body)),
        `${where} ${key}: the body is not JSON: ${answer.body.slice(0, 200)}`,
      );
    }
    assert.deepEqual(
      valueProblems(content[media]!.schema, value, this.#resolve),
      [],
      `${where} ${key} ${media}: the body does not fit the schema: ${answer.body.slice(0, 300)}`,
    );
    this.seenMedia.add(`${where} ${key} ${media}`);
  }

  /** Every documented `METHOD /path status` (with `media`, every response media type) neither seen nor excused; an excused status excuses its media types. */
  unprovoked(excused: ReadonlySet<string>, media: boolean): string[] {
    const missing: string[] = [];
    for (const [path, item] of Object.entries(this.#doc.paths as Record<string, Obj>)) {
      for (const [method, op] of Object.entries(item)) {
        if (method === 'parameters') continue;
        const where = `${method.toUpperCase()} ${path}`;
        for (const [status, raw] of Object.entries((op as Obj).responses as Obj)) {
          if (!media) {
            if (!this.seen.has(`${where} ${status}`) && !excused.has(`${where} ${status}`))
              missing.push(`${where} ${status}`);
            continue;
          }
          if (excused.has(`${where} ${status}`)) continue;
          for (const type of Object.keys((deref<Obj>(this.#doc, raw).content as Obj | undefined) ?? {})) {
            const id = `${where} ${status} ${type}`;
            if (method !== 'head' && !this.seenMedia.has(id) && !excused.has(id)) missing.push(id);
          }
        }
      }
    }
    return missing;
  }
}
