import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStoreUrl } from './store-url.js';

test('a URL with a schema parameter: the parameter is taken out, the password never shown', () => {
  const u = parseStoreUrl('postgres://svc:s3cret@db.example:5433/prod?schema=tenant_a&sslmode=disable');
  assert.equal(u.schema, 'tenant_a');
  assert.equal(u.connectionString, 'postgres://svc:s3cret@db.example:5433/prod?sslmode=disable');
  assert.equal(u.redacted.includes('s3cret'), false);
  assert.match(u.redacted, /svc:\*\*\*@db\.example:5433\/prod/);
  assert.match(u.redacted, /schema=tenant_a/);
});

test('without a schema parameter the tables live in public', () => {
  assert.equal(parseStoreUrl('postgresql://127.0.0.1/test').schema, 'public');
});

for (const [value, message] of [
  ['mysql://h/db', /must be a postgres:\/\/ URL/],
  ['postgres://h', /needs a host and a database name/],
  ['postgres://h/db?schema=Drop;Table', /not a plain lower-case identifier/],
  ['postgres://h/db?schema=' + 'a'.repeat(64), /not a plain lower-case identifier/],
  // It would replace the search_path and synchronous_commit the service sets.
  ['postgres://u:s3cret@h/db?options=-c%20synchronous_commit%3Doff', /may not carry "options"/],
] as const) {
  test(`refused: ${value.slice(0, 40)}`, () => {
    assert.throws(
      () => parseStoreUrl(value),
      (err: Error) => message.test(err.message) && !err.message.includes('s3cret'),
    );
  });
}

test('a refused URL does not echo its password', () => {
  assert.throws(
    () => parseStoreUrl('postgres://u:s3cret@h?schema=X'),
    (err: Error) => !err.message.includes('s3cret'),
  );
});
