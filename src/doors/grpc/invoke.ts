/** The gRPC door's `invoke`: each call becomes one door call the executor serves (the same entry as /run). */
import type { DoorCall } from '../../app/runtime/door-call.js';
import type { FlowExecutor } from '../../app/runtime/flow-executor.js';
import type { IncomingTraceContext } from '../../common/trace-context/spans.js';
import type { FlowResult, LoadedFlow } from '../../engine/index.js';
import type { GrpcDoorDeps, GrpcInvokeMeta, GrpcInvokeResult } from './server.js';

/** Runs a decoded call's flow through the executor; failures are thrown, for the door's status table. */
export function executorInvoke(executor: Pick<FlowExecutor, 'serve'>): GrpcDoorDeps<LoadedFlow>['invoke'] {
  return (tenant, flow, input, meta, admitted) => executor.serve(new GrpcCall(tenant, flow, admitted, input, meta));
}

/** One gRPC call as the executor sees it: the request is already decoded by the door (no body to read). */
class GrpcCall implements DoorCall<unknown, GrpcInvokeResult> {
  readonly door = 'grpc';
  readonly recordsRejection = false;
  readonly correlationId: string;
  readonly headers: Record<string, string>;
  readonly traceContext: IncomingTraceContext | undefined;

  constructor(
    readonly tenant: string,
    readonly flow: string,
    readonly admitted: LoadedFlow | undefined,
    readonly request: unknown,
    meta: GrpcInvokeMeta,
  ) {
    this.correlationId = meta.correlationId;
    this.headers = meta.headers;
    this.traceContext = meta.traceContext;
  }

  /** Decoded by the door with the method's descriptor; grpc-js bounds the message's size. */
  read(): unknown {
    return this.request;
  }

  input(_flow: LoadedFlow, body: unknown): unknown {
    return body;
  }

  answer(result: FlowResult): GrpcInvokeResult {
    return { status: result.status, output: result.output };
  }

  fail(err: unknown): never {
    throw err;
  }
}
