import { Metadata, status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IntegrityError, SvcError } from '../../common/errors.js';
import { grpcCodeFor, toServiceError } from './status-map.js';

describe('gRPC status table', () => {
  const table: Array<[number, status]> = [
    [200, status.OK],
    [201, status.OK],
    [400, status.INVALID_ARGUMENT],
    [401, status.UNAUTHENTICATED],
    [403, status.PERMISSION_DENIED],
    [404, status.NOT_FOUND],
    [409, status.ALREADY_EXISTS],
    [413, status.RESOURCE_EXHAUSTED],
    [422, status.INVALID_ARGUMENT],
    [429, status.RESOURCE_EXHAUSTED],
    [418, status.FAILED_PRECONDITION],
    [500, status.INTERNAL],
    [502, status.UNAVAILABLE],
    [507, status.RESOURCE_EXHAUSTED],
    [503, status.UNAVAILABLE],
    [504, status.DEADLINE_EXCEEDED],
    [599, status.INTERNAL],
    [302, status.UNKNOWN],
  ];
  for (const [http, code] of table) {
    it(`HTTP ${http} maps to ${status[code]}`, () => assert.equal(grpcCodeFor(http), code));
  }

  it('a service error keeps its message as details and its headers as trailing metadata', () => {
    const err = toServiceError(
      new SvcError('SVC_ERR_RATE_LIMITED', 'rate limit exceeded', { headers: { 'Retry-After': '1' } }),
    );
    assert.equal(err.code, status.RESOURCE_EXHAUSTED);
    assert.equal(err.details, 'rate limit exceeded');
    assert.deepEqual((err.metadata as Metadata).get('retry-after'), ['1']);
  });

  it('an error without a status is INTERNAL and does not leak its text', () => {
    const err = toServiceError(new Error('SQLITE_CORRUPT at /secret/path'));
    assert.equal(err.code, status.INTERNAL);
    assert.equal(err.details, 'internal error');
  });

  it('an integrity failure is INTERNAL `internal error`, as on HTTP: the artifact and hash stay in the operator log', () => {
    const err = toServiceError(new IntegrityError('artifact 3f2a... does not match its hash'));
    assert.equal(err.code, status.INTERNAL);
    assert.equal(err.details, 'internal error');
  });
});
