/** The one table from the service's HTTP-style statuses to gRPC status codes (docs/grpc.md repeats it). */
import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { INTERNAL_MESSAGE, publicMessage, SvcError } from '../../common/errors.js';

/**
 * | HTTP status       | gRPC code            |
 * |-------------------|----------------------|
 * | 2xx               | OK                   |
 * | 400, 422          | INVALID_ARGUMENT     |
 * | 401               | UNAUTHENTICATED      |
 * | 403               | PERMISSION_DENIED    |
 * | 404               | NOT_FOUND            |
 * | 409               | ALREADY_EXISTS       |
 * | 413, 429          | RESOURCE_EXHAUSTED   |
 * | 504               | DEADLINE_EXCEEDED    |
 * | 502, 503          | UNAVAILABLE          |
 * | 500, other 5xx    | INTERNAL             |
 * | other 4xx         | FAILED_PRECONDITION  |
 * | anything else     | UNKNOWN              |
 */
export function grpcCodeFor(httpStatus: number): GrpcStatus {
  if (httpStatus >= 200 && httpStatus < 300) return GrpcStatus.OK;
  switch (httpStatus) {
    case 400:
    case 422:
      return GrpcStatus.INVALID_ARGUMENT;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.NOT_FOUND;
    case 409:
      return GrpcStatus.ALREADY_EXISTS;
    case 413:
    case 429:
    case 507:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case 502:
    case 503:
      return GrpcStatus.UNAVAILABLE;
    case 504:
      return GrpcStatus.DEADLINE_EXCEEDED;
  }
  if (httpStatus >= 500 && httpStatus < 600) return GrpcStatus.INTERNAL;
  if (httpStatus >= 400 && httpStatus < 500) return GrpcStatus.FAILED_PRECONDITION;
  return GrpcStatus.UNKNOWN;
}

/** A failure carrying an HTTP-style status, as raised by the gate, the engine and this door. */
export interface StatusLike {
  readonly status: number;
  readonly message: string;
  readonly headers?: Record<string, string> | undefined;
}

export function hasStatus(err: unknown): err is StatusLike {
  return err instanceof Error && typeof (err as { status?: unknown }).status === 'number';
}

/**
 * Turns any failure into a gRPC error: the code from the table, the public message as details
 * (`publicMessage`, as HTTP and SOAP show it), and the error's response headers (e.g. `retry-after`
 * on 429) as trailing metadata. An error without a status is INTERNAL `internal error` (its text
 * may hold internals; it is logged instead).
 */
export function toServiceError(err: unknown): Partial<ServiceError> & { code: GrpcStatus; details: string } {
  const metadata = new Metadata();
  if (!hasStatus(err)) return { code: GrpcStatus.INTERNAL, details: INTERNAL_MESSAGE, metadata };
  for (const [k, v] of Object.entries(err.headers ?? {})) metadata.set(k.toLowerCase(), v);
  // A flow's non-2xx answer (FlowStatusError) is not an SvcError: its text is the flow's own output.
  return {
    code: grpcCodeFor(err.status),
    details: err instanceof SvcError ? publicMessage(err) : err.message,
    metadata,
  };
}
