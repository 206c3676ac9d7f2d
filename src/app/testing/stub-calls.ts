/**
 * An example's call outs, answered from its stubs and recorded, with no socket ever opened: each
 * step's calls go to an undici MockAgent that refuses the network, so the real http_egress code
 * (templates, encoding, SOAP envelopes, the response ceiling, decoding, SOAP Faults, its errors)
 * runs on every answer. A call without a stub is answered by an error and named, and it fails
 * the example whatever the flow does with that error.
 */
import { errors, MockAgent, type Dispatcher } from 'undici';
import { soapContentType, stripXmlDeclaration, wrapEnvelope } from '../../common/soap-envelope.js';
import type { StepIR } from '../../ir/types.js';
import type { StubAnswer } from './example-spec.js';

/** One call a step made, as the backend would have received it. */
export interface RecordedCall {
  readonly step: string;
  readonly method: string;
  readonly url: string;
  /** Lowercase names; the call's own `traceparent` left out (it differs on every run). */
  readonly headers: Record<string, string>;
  /** JSON bodies as values, anything else as text; null when empty. */
  readonly body: unknown;
}

/** What an OAuth2 token endpoint answers in an example (no stub needed for it). */
const EXAMPLE_TOKEN = JSON.stringify({ access_token: 'example-token', token_type: 'Bearer', expires_in: 3600 });

export class StubbedCalls {
  readonly calls: RecordedCall[] = [];
  /** The first call no stub answers: it fails the example, naming the step and the URL. */
  missing: string | undefined;
  readonly #stubs: Record<string, readonly StubAnswer[]>;
  readonly #agents = new Map<string, MockAgent>();
  readonly #served = new Map<string, number>();

  constructor(stubs: Record<string, readonly StubAnswer[]>) {
    this.#stubs = stubs;
  }

  /** The dispatcher of one step's calls (http_egress's `dispatcherFor`). */
  readonly dispatcherFor = (step: StepIR): Dispatcher => {
    let agent = this.#agents.get(step.name);
    if (agent === undefined) {
      agent = new MockAgent();
      agent.disableNetConnect();
      agent
        .get(() => true)
        .intercept({ path: () => true, method: () => true })
        .reply((req) => this.#answer(step, req))
        .persist();
      this.#agents.set(step.name, agent);
    }
    return agent;
  };

  /** Stubs named for steps that have no call out (a typo would otherwise answer nothing, silently). */
  unusedStubs(steps: ReadonlySet<string>): string[] {
    return Object.keys(this.#stubs).filter((s) => !steps.has(s));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#agents.values()].map((a) => a.close()));
  }

  #answer(
    step: StepIR,
    req: { origin?: string | URL; path: string; method: string; headers?: unknown; body?: unknown },
  ): { statusCode: number; data: string | Buffer; responseOptions: { headers: Record<string, string> } } {
    const url = `${String(req.origin ?? '')}${req.path}`;
    const headers = headerMap(req.headers);
    const text = typeof req.body === 'string' ? req.body : Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    if (step.http?.oauth2 !== undefined && /(^|&)grant_type=client_credentials(&|$)/.test(text))
      return {
        statusCode: 200,
        data: EXAMPLE_TOKEN,
        responseOptions: { headers: { 'content-type': 'application/json' } },
      };
    delete headers.traceparent;
    delete headers.tracestate;
    this.calls.push({
      step: step.name,
      method: req.method,
      url,
      headers,
      body: bodyValue(text, headers['content-type']),
    });
    const answers = this.#stubs[step.name];
    if (answers === undefined) {
      this.missing ??= `step '${step.name}' called ${req.method} ${url}, and the example has no stub for it; add stubs.${step.name} (status, headers, body; refused; timeout)`;
      throw Object.assign(new Error(`no stub for step '${step.name}' in this example`), { code: 'ENOSTUB' });
    }
    const n = this.#served.get(step.name) ?? 0;
    this.#served.set(step.name, n + 1);
    const answer = answers[Math.min(n, answers.length - 1)]!;
    if (answer.kind === 'timeout') throw new errors.HeadersTimeoutError();
    if (answer.kind === 'refused')
      throw Object.assign(new Error(`connect ECONNREFUSED ${new URL(url).host}`), { code: 'ECONNREFUSED' });
    return responseOf(step, answer);
  }
}

function responseOf(
  step: StepIR,
  answer: Extract<StubAnswer, { kind: 'response' }>,
): { statusCode: number; data: string; responseOptions: { headers: Record<string, string> } } {
  const headers = { ...answer.headers };
  const soap = step.http?.soapVersion;
  let data: string;
  if (soap !== undefined) {
    // A SOAP step's stub may give the Body's content alone: it is put in the step's envelope.
    const xml = typeof answer.body === 'string' ? answer.body : '';
    data = /<(?:[\w.-]+:)?Envelope[\s>]/.test(xml) ? xml : wrapEnvelope(soap, stripXmlDeclaration(xml));
    headers['content-type'] ??= soapContentType(soap, undefined);
  } else if (typeof answer.body === 'string') {
    data = answer.body;
    headers['content-type'] ??= /^\s*</.test(answer.body) ? 'application/xml' : 'text/plain';
  } else if (answer.body === null) {
    data = '';
  } else {
    data = JSON.stringify(answer.body);
    headers['content-type'] ??= 'application/json';
  }
  return { statusCode: answer.status, data, responseOptions: { headers } };
}

function headerMap(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) out[String(raw[i]).toLowerCase()] = String(raw[i + 1]);
  } else if (typeof raw === 'object' && raw !== null) {
    for (const [k, v] of Object.entries(raw)) if (v !== undefined) out[k.toLowerCase()] = String(v);
  }
  return out;
}

function bodyValue(text: string, contentType: string | undefined): unknown {
  if (text === '') return null;
  if (contentType !== undefined && /json/i.test(contentType)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}
