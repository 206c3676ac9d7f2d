/**
 * The gRPC door: a plaintext HTTP/2 server (@grpc/grpc-js) whose methods come from the tenants'
 * latest protobuf descriptors and whose answers come from `inbound: grpc` flows.
 *
 * Handlers are registered per method path with pass-through (de)serializers, and every call
 * decodes and encodes with the descriptor that is latest at that moment: moving `latest` changes
 * the wire format of every flow of the tenant at the next call, in every process.
 */
import {
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type Metadata,
  type sendUnaryData,
  type ServerDuplexStream,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerWritableStream,
} from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { buildHeaders } from '../../engine/headers.js';
import type protobuf from 'protobufjs';
import { SvcError } from '../../common/errors.js';
import type { IncomingTraceContext } from '../../common/trace-context/spans.js';
import { JSON_MAX_DEPTH, valueNestsDeeperThan } from '../../common/json-depth.js';
import type { Logger } from '../../common/logger.js';
import type { GateRequest } from '../../gate/gate.js';
import { MethodCatalog, type DescriptorSource, type ResolvedMethod } from './method-catalog.js';
import { outputMismatch } from './output-shape.js';
import { toServiceError } from './status-map.js';

/** A deployed flow with `inbound: grpc`. */
export interface GrpcRoute {
  readonly tenant: string;
  readonly flow: string;
  /** Its front-matter `grpc_method` (`pkg.Service/Method`); undefined: the method named like the flow (MethodCatalog.namedLike). */
  readonly method: string | undefined;
}

export interface GrpcInvokeMeta {
  /** From `x-correlation-id`, else `x-request-id` metadata, else a fresh UUID v4. */
  readonly correlationId: string;
  /** Text metadata of the call, lowercase keys, without `authorization` and binary (`-bin`) entries. */
  readonly headers: Record<string, string>;
  /** W3C `traceparent`/`tracestate` metadata, as sent (several values joined by commas, like HTTP). */
  readonly traceContext?: IncomingTraceContext | undefined;
}

export interface GrpcInvokeResult {
  /** HTTP-style status of the run; 2xx answers the call, anything else fails it through the status table. */
  readonly status: number;
  readonly output: unknown;
}

/**
 * What the door needs from the rest of the service (wired by src/serve/). `F`: the flow as the
 * service loads it, which the gate's pass carries to `invoke` (the door only hands it on).
 */
export interface GrpcDoorDeps<F = unknown> {
  /** The deployed `inbound: grpc` flows; re-read whenever the registry changes. */
  routes(): readonly GrpcRoute[];
  /**
   * The same gate as HTTP; absent under `--no-auth`. Throws an error with `.status` to refuse; a
   * pass carries the flow it read, handed to `invoke` so the flow is looked up once per call.
   */
  readonly gate?: { check(req: GateRequest): { readonly flow?: F | undefined } } | undefined;
  /**
   * Runs the flow (the engine); throws an error with `.status` and `.message` on failure.
   * `admitted`: the flow the gate's pass carried (undefined: none; invoke looks it up).
   */
  invoke(tenant: string, flow: string, input: unknown, meta: GrpcInvokeMeta, admitted?: F): Promise<GrpcInvokeResult>;
  /** The descriptors repo (src/store/contracts/descriptors.ts). */
  readonly descriptors: DescriptorSource;
  /** Extra change token for `routes()` when they live outside the registry database. @default none */
  routesToken?(): string;
}

export interface GrpcDoorOptions<F = unknown> {
  /** Bind address. */
  readonly host: string;
  /** Bind port; 0 asks the system for one. */
  readonly port: number;
  readonly deps: GrpcDoorDeps<F>;
  readonly log?: Logger | undefined;
  /** How often the door checks (one read of the registry file's change counter) whether routes or descriptors changed, in ms. @default 250 */
  readonly refreshIntervalMs?: number;
  /** How long close() lets calls in flight finish before cutting them, in ms. @default 5000 */
  readonly shutdownGraceMs?: number;
}

/** Lifecycle: 'running' -> 'stopping' -> 'stopped'; close() runs once. */
export type GrpcDoorState = 'running' | 'stopping' | 'stopped';

export interface GrpcDoor {
  readonly port: number;
  /** `host:port` as bound, e.g. `127.0.0.1:50051`. */
  readonly address: string;
  readonly state: GrpcDoorState;
  /** Re-reads routes and descriptors now (the timer does it within refreshIntervalMs anyway). */
  refresh(): void;
  close(): Promise<void>;
}

/**
 * Request JSON as the flow sees it (protobufjs `toObject`): field names as declared in the .proto,
 * 64-bit integers as decimal strings, enums as their names, bytes as base64, defaults included.
 */
export const REQUEST_JSON: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  bytes: String,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
};

type Kind = 'unary' | 'serverStream' | 'clientStream' | 'bidi';
const KIND_OF: Record<ResolvedMethod['kind'], Kind> = {
  unary: 'unary',
  'server-streaming': 'serverStream',
  'client-streaming': 'clientStream',
  'bidi-streaming': 'bidi',
};
const METHOD_NAME = /^[A-Za-z_][\w.]*\.[A-Za-z_]\w*\/[A-Za-z_]\w*$|^[A-Za-z_]\w*\/[A-Za-z_]\w*$/;
const passThrough = (b: Buffer): Buffer => b;

interface RouteEntry {
  readonly tenant: string;
  readonly flow: string;
  readonly method: string;
  readonly kind: Kind;
}

/** Opens the door and resolves once it listens. */
export async function startGrpcDoor<F>(opts: GrpcDoorOptions<F>): Promise<GrpcDoor> {
  const door = new GrpcDoorServer<F>(opts);
  const port = await door.listen();
  return {
    port,
    address: `${opts.host}:${port}`,
    get state() {
      return door.state;
    },
    refresh: () => door.refresh(),
    close: () => door.close(),
  };
}

class GrpcDoorServer<F> {
  readonly #opts: GrpcDoorOptions<F>;
  readonly #server = new Server();
  readonly #catalog: MethodCatalog;
  /** Path (`/pkg.Service/Method`) -> the flow answering it. */
  #routes = new Map<string, RouteEntry>();
  /** Path -> handler kind currently registered with grpc-js. */
  readonly #registered = new Map<string, Kind>();
  #token: string | undefined;
  readonly #warned = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;
  state: GrpcDoorState = 'running';

  constructor(opts: GrpcDoorOptions<F>) {
    this.#opts = opts;
    this.#catalog = new MethodCatalog(opts.deps.descriptors, (m) => this.#warnOnce(m));
  }

  async listen(): Promise<number> {
    this.refresh();
    const port = await new Promise<number>((resolve, reject) => {
      this.#server.bindAsync(`${this.#opts.host}:${this.#opts.port}`, ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      );
    });
    this.#timer = setInterval(() => this.#refreshIfChanged(), this.#opts.refreshIntervalMs ?? 250);
    this.#timer.unref();
    return port;
  }

  /** Rebuilds the path table from the routes and the tenants' latest descriptors. */
  refresh(): void {
    const deps = this.#opts.deps;
    this.#token = this.#changeToken();
    const next = new Map<string, RouteEntry>();
    const sorted = [...deps.routes()].sort((a, b) => a.tenant.localeCompare(b.tenant) || a.flow.localeCompare(b.flow));
    for (const r of sorted) {
      const m = this.#methodOf(r);
      if (m === undefined) continue;
      const path = `/${m.fullName}`;
      const taken = next.get(path);
      if (taken !== undefined) {
        this.#warnOnce(
          `gRPC method ${m.fullName} is answered by flow ${taken.tenant}/${taken.flow}; flow ${r.tenant}/${r.flow} also declares it and is not reachable`,
        );
        continue;
      }
      if (!m.callable)
        this.#warnOnce(
          `gRPC flow ${r.tenant}/${r.flow}: ${m.fullName} is ${m.kind}; only unary and server-streaming methods can be called`,
        );
      next.set(path, { tenant: r.tenant, flow: r.flow, method: m.fullName, kind: KIND_OF[m.kind] });
    }
    for (const [path, kind] of this.#registered) {
      if (next.get(path)?.kind !== kind) {
        this.#server.unregister(path);
        this.#registered.delete(path);
      }
    }
    this.#routes = next;
    for (const [path, entry] of next) {
      if (this.#registered.has(path)) continue;
      this.#register(path, entry.kind);
      this.#registered.set(path, entry.kind);
    }
  }

  /** The method a route answers (its grpc_method, else the one named like the flow), or undefined with a warning. */
  #methodOf(r: GrpcRoute): ResolvedMethod | undefined {
    const publish = `publish one with \`svc proto deploy <set> --tenant ${r.tenant} --name <name> --version <v> --latest\``;
    if (r.method === undefined) {
      const m = this.#catalog.namedLike(r.tenant, r.flow);
      if (m === undefined)
        this.#warnOnce(
          `gRPC flow ${r.tenant}/${r.flow} has no grpc_method, and no latest descriptor of tenant ${r.tenant} defines a method named like the flow; set grpc_method: pkg.Service/Method or ${publish}`,
        );
      return m;
    }
    if (!METHOD_NAME.test(r.method)) {
      this.#warnOnce(
        `gRPC flow ${r.tenant}/${r.flow}: grpc_method "${r.method}" is not of the form pkg.Service/Method`,
      );
      return undefined;
    }
    const m = this.#catalog.resolve(r.tenant, r.method);
    if (m === undefined)
      this.#warnOnce(
        `gRPC flow ${r.tenant}/${r.flow} answers ${r.method}, which no latest descriptor of tenant ${r.tenant} defines; ${publish}`,
      );
    return m;
  }

  #changeToken(): string {
    return `${this.#opts.deps.descriptors.changeToken()}|${this.#opts.deps.routesToken?.() ?? ''}`;
  }

  #refreshIfChanged(): void {
    try {
      if (this.#changeToken() !== this.#token) this.refresh();
    } catch (err) {
      this.#opts.log?.error({ err }, 'gRPC door could not re-read routes or descriptors');
    }
  }

  #register(path: string, kind: Kind): void {
    if (kind === 'unary') {
      this.#server.register(
        path,
        (call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => void this.#unary(path, call, cb),
        passThrough,
        passThrough,
        'unary',
      );
    } else if (kind === 'serverStream') {
      this.#server.register(
        path,
        (call: ServerWritableStream<Buffer, Buffer>) => void this.#serverStream(path, call),
        passThrough,
        passThrough,
        'serverStream',
      );
    } else {
      // Registered so the caller learns why, instead of a bare "not implemented".
      const refusal = {
        code: GrpcStatus.UNIMPLEMENTED,
        details: `${path.slice(1)} is ${kind === 'bidi' ? 'bidi-streaming' : 'client-streaming'}; only unary and server-streaming methods can be called`,
      };
      if (kind === 'bidi')
        this.#server.register(
          path,
          (call: ServerDuplexStream<Buffer, Buffer>) => call.emit('error', refusal),
          passThrough,
          passThrough,
          'bidi',
        );
      else
        this.#server.register(
          path,
          (_call: ServerReadableStream<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => cb(refusal),
          passThrough,
          passThrough,
          'clientStream',
        );
    }
  }

  async #unary(path: string, call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>): Promise<void> {
    try {
      const { method, output } = await this.#run(path, call.metadata, call.request, 'unary');
      if (Array.isArray(output))
        throw new SvcError(
          'SVC_ERR_INTERNAL',
          `flow output is a list, but ${method.fullName} is unary and answers one ${method.responseType.fullName.slice(1)}`,
        );
      cb(null, encode(method, output));
    } catch (err) {
      cb(this.#fail(path, err));
    }
  }

  async #serverStream(path: string, call: ServerWritableStream<Buffer, Buffer>): Promise<void> {
    try {
      const { method, output } = await this.#run(path, call.metadata, call.request, 'serverStream');
      // Encode everything first: a bad element fails the call before any message is sent.
      const messages = (Array.isArray(output) ? output : [output]).map((o) => encode(method, o));
      for (const m of messages) call.write(m);
      call.end();
    } catch (err) {
      call.emit('error', this.#fail(path, err));
    }
  }

  /** Gate, then decode with the latest descriptor, then the flow. */
  async #run(
    path: string,
    metadata: Metadata,
    request: Buffer,
    kind: Kind,
  ): Promise<{ method: ResolvedMethod; output: unknown }> {
    this.#refreshIfChanged();
    const route = this.#routes.get(path);
    if (route === undefined) throw unimplemented(path);
    const deps = this.#opts.deps;
    let admitted: F | undefined;
    if (deps.gate) {
      const auth = metadata.get('authorization').filter((v): v is string => typeof v === 'string');
      admitted = deps.gate.check({
        authorization: auth.length > 1 ? auth : auth[0],
        tenant: route.tenant,
        flow: route.flow,
        route: 'grpc',
      }).flow;
    }
    const method = this.#catalog.resolve(route.tenant, route.method);
    if (method === undefined || KIND_OF[method.kind] !== kind) {
      // The latest descriptor moved between the path table and this call.
      this.refresh();
      throw unimplemented(path);
    }
    const input = decodeRequest(method, request);
    const result = await deps.invoke(route.tenant, route.flow, input, invokeMeta(metadata), admitted);
    if (result.status < 200 || result.status >= 300)
      throw new FlowStatusError(result.status, describeOutput(result.output));
    return { method, output: result.output };
  }

  #fail(path: string, err: unknown): ReturnType<typeof toServiceError> {
    if (isGrpcError(err)) return err;
    const se = toServiceError(err);
    if (se.code === GrpcStatus.INTERNAL) this.#opts.log?.error({ err, method: path.slice(1) }, 'gRPC call failed');
    return se;
  }

  #warnOnce(message: string): void {
    if (this.#warned.has(message)) return;
    this.#warned.add(message);
    this.#opts.log?.warn(message);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.state = 'stopping';
      if (this.#timer) clearInterval(this.#timer);
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          this.#server.forceShutdown();
          resolve();
        }, this.#opts.shutdownGraceMs ?? 5000);
        this.#server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      this.state = 'stopped';
    })();
    return this.#closing;
  }
}

/** A flow that answered with a non-2xx status; mapped through the same table as every failure. */
class FlowStatusError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'FlowStatusError';
  }
}

function unimplemented(path: string): { code: GrpcStatus; details: string } {
  return { code: GrpcStatus.UNIMPLEMENTED, details: `no flow answers ${path.slice(1)}` };
}

function isGrpcError(err: unknown): err is { code: GrpcStatus; details: string } {
  return (
    typeof err === 'object' &&
    err !== null &&
    !(err instanceof Error) &&
    typeof (err as { code?: unknown }).code === 'number'
  );
}

/**
 * The request as the flow sees it. protobufjs bounds its own recursion (100 nested messages), but
 * repeated and map fields nest the JSON further: a request nesting deeper than JSON_MAX_DEPTH is
 * refused like a JSON body that does.
 */
function decodeRequest(method: ResolvedMethod, request: Buffer): unknown {
  const type = method.requestType;
  let input: unknown;
  try {
    input = type.toObject(type.decode(request), REQUEST_JSON);
  } catch (cause) {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `request is not a valid ${type.fullName.slice(1)}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
  if (valueNestsDeeperThan(input))
    throw new SvcError('SVC_ERR_INVALID_INPUT', `request nests deeper than ${JSON_MAX_DEPTH} levels`);
  return input;
}

function encode(method: ResolvedMethod, output: unknown): Buffer {
  const type = method.responseType;
  if (typeof output !== 'object' || output === null || Array.isArray(output)) {
    throw new SvcError(
      'SVC_ERR_INTERNAL',
      `flow output must be an object to encode as ${type.fullName.slice(1)}, got ${Array.isArray(output) ? 'a nested list' : output === null ? 'null' : typeof output}`,
    );
  }
  const mismatch = outputMismatch(type, output);
  if (mismatch !== undefined)
    throw new SvcError('SVC_ERR_INTERNAL', `flow output does not fit ${type.fullName.slice(1)}: ${mismatch}`);
  try {
    return Buffer.from(type.encode(type.fromObject(output as Record<string, unknown>)).finish());
  } catch (cause) {
    throw new SvcError(
      'SVC_ERR_INTERNAL',
      `flow output does not fit ${type.fullName.slice(1)}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/** The flow's view of a call's metadata: correlation id and ctx.headers (exported for tests). */
export function invokeMeta(metadata: Metadata): GrpcInvokeMeta {
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata.getMap())) {
    if (k.endsWith('-bin') || typeof v !== 'string') continue;
    raw[k] = v;
  }
  // The same rules as HTTP: credentials (authorization, proxy-authorization, cookie, x-api-key)
  // and hop-by-hop names never reach the flow.
  const headers = buildHeaders(raw);
  const given = headers['x-correlation-id'] ?? headers['x-request-id'];
  const correlationId = given !== undefined && given.length > 0 && given.length <= 128 ? given : randomUUID();
  const traceparent = textValues(metadata, 'traceparent');
  return {
    correlationId,
    headers,
    traceContext:
      traceparent === undefined ? undefined : { traceparent, tracestate: textValues(metadata, 'tracestate') },
  };
}

/** The text values of a metadata key joined by commas (as HTTP joins repeated headers); undefined when absent. */
function textValues(metadata: Metadata, key: string): string | undefined {
  const values = metadata.get(key).filter((v): v is string => typeof v === 'string');
  return values.length === 0 ? undefined : values.join(',');
}

function describeOutput(output: unknown): string {
  if (typeof output === 'object' && output !== null && typeof (output as { error?: unknown }).error === 'string')
    return (output as { error: string }).error;
  if (typeof output === 'string') return output;
  const text = JSON.stringify(output) ?? 'flow failed';
  return text.length > 1024 ? `${text.slice(0, 1024)}...` : text;
}
