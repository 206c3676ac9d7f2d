/** docs/errors.md stays true: its table has one row per error code, with the statuses every door sends. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { ErrorCodes, type ErrorCode } from '../src/common/errors.js';
import { grpcCodeFor } from '../src/doors/grpc/status-map.js';
import { defaultFaultCode, soapFaultStatus } from '../src/doors/soap/response.js';

/** The repository root, found from this compiled file (dist/test/). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface DocRow {
  readonly line: number;
  readonly code: string;
  readonly http: string;
  readonly grpc: string;
  readonly soap11: string;
  readonly soap12: string;
}

/** The rows of the table whose header starts `| Code |`, cells trimmed and backticks dropped. */
function errorTable(doc: string): DocRow[] {
  const lines = doc.split('\n');
  const start = lines.findIndex((l) => l.startsWith('| Code |'));
  assert.ok(start >= 0, 'docs/errors.md has no table starting "| Code |"');
  const rows: DocRow[] = [];
  // Skip the header and its |---| separator; the table ends at the first line that is not a row.
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    const cells = lines[i]!.split('|')
      .slice(1, -1)
      .map((c) => c.trim().replaceAll('`', ''));
    assert.ok(cells.length >= 5, `docs/errors.md:${i + 1}: a row needs code, HTTP, gRPC, SOAP 1.1 and SOAP 1.2 cells`);
    rows.push({ line: i + 1, code: cells[0]!, http: cells[1]!, grpc: cells[2]!, soap11: cells[3]!, soap12: cells[4]! });
  }
  return rows;
}

/**
 * What the SOAP door sends for an error of this code, as "<fault code>, <status>". The door reads a
 * malformed envelope by its code (run-handler.ts: `malformedEnvelope: err.code === 'SVC_ERR_SOAP_MALFORMED'`).
 */
function soapCell(version: '1.1' | '1.2', code: ErrorCode): string {
  const errorStatus = ErrorCodes[code];
  const malformedEnvelope = code === 'SVC_ERR_SOAP_MALFORMED';
  return `${defaultFaultCode(version, errorStatus, malformedEnvelope)}, ${soapFaultStatus(version, { errorStatus, malformedEnvelope })}`;
}

describe('docs/errors.md', () => {
  const rows = errorTable(readFileSync(resolve(ROOT, 'docs/errors.md'), 'utf8'));
  const codes = Object.keys(ErrorCodes) as ErrorCode[];

  const documented = rows.map((r) => r.code);

  it('has a row for every code of ErrorCodes', () => {
    assert.deepEqual(
      codes.filter((c) => !documented.includes(c)),
      [],
      'codes missing from docs/errors.md',
    );
  });

  it('has no row for a code that is not in ErrorCodes, and no code twice', () => {
    assert.deepEqual(
      documented.filter((c) => !(c in ErrorCodes)),
      [],
      'rows for codes that are not in ErrorCodes',
    );
    assert.deepEqual(
      documented.filter((c, i) => documented.indexOf(c) !== i),
      [],
      'codes with more than one row',
    );
  });

  it("gives each code's HTTP status as ErrorCodes does", () => {
    for (const row of rows.filter((r) => r.code in ErrorCodes)) {
      assert.equal(
        row.http,
        String(ErrorCodes[row.code as ErrorCode]),
        `docs/errors.md:${row.line}: HTTP status of ${row.code}`,
      );
    }
  });

  it('gives the gRPC status the gRPC door sends for that HTTP status', () => {
    for (const row of rows.filter((r) => r.code in ErrorCodes)) {
      const expected = GrpcStatus[grpcCodeFor(ErrorCodes[row.code as ErrorCode])];
      assert.equal(row.grpc, expected, `docs/errors.md:${row.line}: gRPC status of ${row.code}`);
    }
  });

  it('gives the SOAP 1.1 and SOAP 1.2 fault code and status the SOAP door sends', () => {
    for (const row of rows.filter((r) => r.code in ErrorCodes)) {
      const code = row.code as ErrorCode;
      assert.equal(row.soap11, soapCell('1.1', code), `docs/errors.md:${row.line}: SOAP 1.1 fault of ${code}`);
      assert.equal(row.soap12, soapCell('1.2', code), `docs/errors.md:${row.line}: SOAP 1.2 fault of ${code}`);
    }
  });
});
