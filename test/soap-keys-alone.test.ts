/**
 * One SOAP front-matter key without the other (spec: "Both or neither. Either alone means no SOAP
 * configuration"): validate and deploy warn naming the missing key and succeed; the served flow has
 * no WSDL and runs as a plain JSON flow.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createKey, createTenant, flow } from './helpers/registry-setup.js';
import { requestWithHeaders } from './helpers/raw-http.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';

const BODY = '## Step: answer\n```ntd\n{"got": {{ ctx.input.a }}}\n```';
// Line 5 of each file is the lone SOAP key (lines 1-4: "---", flowdoc_version, flow, tenant).
const ONLY_OPERATION = {
  name: 'only-operation',
  text: flow('acme', 'only-operation', 'soap_operation: GetQuote', BODY),
  present: 'soap_operation',
  missing: 'soap_namespace',
};
const ONLY_NAMESPACE = {
  name: 'only-namespace',
  text: flow('acme', 'only-namespace', 'soap_namespace: urn:example:quotes', BODY),
  present: 'soap_namespace',
  missing: 'soap_operation',
};

describe('a flow with only one of soap_operation and soap_namespace', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key = '';
  const file = (name: string) => join(sandbox.home, `${name}.flow.md`);
  const warning = (f: { name: string; present: string; missing: string }) =>
    `${file(f.name)}:5: warning: front matter: "${f.present}" without "${f.missing}" means no SOAP configuration`;

  before(() => {
    createTenant(sandbox, 'acme');
    key = createKey(sandbox, 'acme');
    for (const f of [ONLY_OPERATION, ONLY_NAMESPACE]) writeFileSync(file(f.name), f.text);
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  for (const f of [ONLY_OPERATION, ONLY_NAMESPACE]) {
    it(`validate exits 0 and warns on stderr that "${f.missing}" is missing (${f.name})`, () => {
      const r = svc(sandbox, ['validate', file(f.name)]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${file(f.name)}: ok\n`);
      assert.ok(r.stderr.startsWith(warning(f)), r.stderr);
    });

    it(`deploy publishes it and prints the same warning (${f.name})`, () => {
      const r = svc(sandbox, ['deploy', file(f.name), '-v', '1.0.0', '--db', sandbox.db]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^deployed\n/);
      assert.ok(r.stderr.startsWith(warning(f)), r.stderr);
    });
  }

  it('a refused flow shows the warning beside its errors', () => {
    const bad = file('bad');
    writeFileSync(bad, flow('acme', 'bad', 'soap_operation: GetQuote\ncolour: red', BODY));
    const r = svc(sandbox, ['deploy', bad, '-v', '1.0.0', '--db', sandbox.db]);
    assert.equal(r.code, 1);
    assert.ok(
      r.stderr.includes(`${bad}:5: warning: front matter: "soap_operation" without "soap_namespace"`),
      r.stderr,
    );
    assert.ok(r.stderr.includes(`${bad}:6: front matter: unknown front-matter key "colour"`), r.stderr);
    assert.match(r.stderr, /\n1 error; nothing was published\n$/);
  });

  describe('served', () => {
    before(async () => {
      server = await startServer(sandbox);
    });

    for (const f of [ONLY_OPERATION, ONLY_NAMESPACE]) {
      it(`has no WSDL: GET .../wsdl answers 404 (${f.name})`, async () => {
        const r = await requestWithHeaders(`${server.url}/flows/acme/${f.name}/wsdl`);
        assert.equal(r.status, 404, r.body);
      });

      it(`runs on /run as a plain JSON flow (${f.name})`, async () => {
        const r = await requestWithHeaders(`${server.url}/flows/acme/${f.name}/run`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: '{"a": 7}',
        });
        assert.equal(r.status, 200, r.body);
        assert.match(String(r.headers['content-type']), /^application\/json/);
        assert.deepEqual(JSON.parse(r.body), { got: 7 });
      });
    }
  });
});
