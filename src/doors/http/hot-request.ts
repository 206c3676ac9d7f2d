/** A request of POST .../run or .../enqueue as the route handlers read it, whichever front parsed it. */
import type { IncomingMessage } from 'node:http';
import { readBody } from './body.js';
import type { InboundRequest } from './inbound.js';

export interface HotRequest extends InboundRequest {
  /**
   * The body: 413 when it passes `limitBytes` (its declared length at once), 408 when it has not
   * all arrived `timeoutMs` after reading began. Every way of giving up closes the connection
   * after the answer. A body already whole may come back at once, without a promise.
   */
  readBody(limitBytes: number, timeoutMs?: number): Buffer | Promise<Buffer>;
}

/** A request node:http parsed (the lean front left it to node:http): its body is read from the request's stream. */
export class NodeHotRequest implements HotRequest {
  constructor(readonly incoming: IncomingMessage) {}

  get headers(): IncomingMessage['headers'] {
    return this.incoming.headers;
  }

  get rawHeaders(): string[] {
    return this.incoming.rawHeaders;
  }

  readBody(limitBytes: number, timeoutMs?: number): Promise<Buffer> {
    return readBody(this.incoming, limitBytes, timeoutMs);
  }
}
