/** Reads the demo set for `svc simulate`: each `<name>.flow.md` compiled (for its tenant and flow name) with its `<name>.sample.json` beside it. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../../common/errors.js';
import { JSON_MAX_DEPTH, jsonNestsDeeperThan } from '../../common/json-depth.js';
import { formatDiagnostic } from '../../flow/diagnostics.js';
import { compileFile } from '../../app/use-cases/publish.js';
import type { SimFlow } from './plan.js';

/**
 * Every flow of `dir` in file-name order. The tenant and name come from the compiler, not from
 * the text, so simulate sends traffic to exactly what `svc deploy` of the same file publishes.
 * @throws SvcError SVC_ERR_INVALID_INPUT when the directory is missing or holds no flow, a flow does not compile, or a sample is missing or not JSON
 */
export function loadDemoFlows(dir: string): SimFlow[] {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.flow.md'))
      .sort();
  } catch (err) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `cannot read the demo directory ${dir}: ${(err as Error).message}`);
  }
  if (names.length === 0)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `the demo directory ${dir} holds no *.flow.md file`);
  return names.map((name) => {
    const path = join(dir, name);
    const result = compileFile({ path });
    if (!result.ir) {
      const first = result.diagnostics[0];
      throw new SvcError(
        'SVC_ERR_INVALID_INPUT',
        `${path} does not compile${first ? `: ${formatDiagnostic(first)}` : ''}`,
      );
    }
    const samplePath = join(dir, `${name.slice(0, -'.flow.md'.length)}.sample.json`);
    return { tenant: result.ir.tenant, flow: result.ir.flow, body: readSample(samplePath) };
  });
}

/** The sample's JSON, re-serialised compactly (checked to be JSON, so the server never gets a broken body from us). */
function readSample(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `cannot read the sample input ${path}: ${(err as Error).message}`);
  }
  // The server refuses a deeper body, and JSON.stringify below would run out of stack on a much deeper one.
  if (jsonNestsDeeperThan(Buffer.from(text)))
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `the sample input ${path} nests deeper than ${JSON_MAX_DEPTH} levels, which the server refuses`,
    );
  try {
    return JSON.stringify(JSON.parse(text));
  } catch (err) {
    throw new SvcError('SVC_ERR_INVALID_INPUT', `the sample input ${path} is not JSON: ${(err as Error).message}`);
  }
}
