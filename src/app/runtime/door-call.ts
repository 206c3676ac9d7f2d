/** What a synchronous door hands the executor for one request (types only): FlowExecutor.serve's argument. */
import type { FlowResult, LoadedFlow } from '../../engine/index.js';
import type { RunMeta } from './run-meta.js';

/**
 * One request through a door that answers it (HTTP /run, SOAP, gRPC), as the door translates it:
 * the request in, the answer or the error out. The executor does the rest in one order for every
 * door: the flow (the gate's, else looked up), the body within the flow's ceiling, the rejection
 * rows of a request that fails before its flow starts, the run.
 *
 * It is also the run's RunMeta: the door fills `door`, `headers` and `soap` in `input`, once it
 * has read what they depend on (one object per request, no copy).
 */
export interface DoorCall<B, A> extends RunMeta {
  readonly tenant: string;
  readonly flow: string;
  /** The flow the gate admitted, read this turn; undefined: the executor looks it up. */
  readonly admitted: LoadedFlow | undefined;
  /**
   * Whether a request that fails before its flow starts gets its `received` and `completed` rows
   * (FlowExecutor.recordRejected). HTTP and SOAP: yes. gRPC: no, as its decoding failures happen
   * in the door, before the executor.
   */
  readonly recordsRejection: boolean;
  /** The body, read within `ceilingBytes` (the flow's `max_message_bytes`, else the platform's). */
  read(ceilingBytes: number): B | Promise<B>;
  /** The flow's input from the body (signature, parsing); fills the run's meta. Throws to refuse. */
  input(flow: LoadedFlow, body: B): unknown;
  /** The door's answer to a run that returned. */
  answer(result: FlowResult): A;
  /** The door's answer to a failure (or a throw, for a door whose errors travel as exceptions). */
  fail(err: unknown): A;
}
