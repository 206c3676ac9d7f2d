import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mediaType, type InboundRequest } from './inbound.js';

const withType = (contentType: string | undefined): InboundRequest =>
  ({ headers: contentType === undefined ? {} : { 'content-type': contentType }, rawHeaders: [] }) as InboundRequest;

describe('mediaType: the media type of a request, lowercased without parameters', () => {
  const cases: [string | undefined, string][] = [
    [undefined, ''],
    ['', ''],
    ['application/json', 'application/json'],
    ['application/json; charset=utf-8', 'application/json'],
    ['Application/JSON', 'application/json'],
    ['  application/xml ; charset=utf-8', 'application/xml'],
    ['text/xml;charset=UTF-8', 'text/xml'],
    ['application/json ', 'application/json'],
    [';', ''],
  ];
  for (const [given, expected] of cases) {
    it(`${JSON.stringify(given)} -> ${JSON.stringify(expected)}`, () =>
      assert.equal(mediaType(withType(given)), expected));
  }
});
