/**
 * Test support (no protoc here): FileDescriptorSet bytes built from .proto text with protobufjs,
 * the same bytes `protoc --include_imports --descriptor_set_out` would give for these files.
 */
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import descriptorExt from 'protobufjs/ext/descriptor/index.js';
import { parseDescriptorSet } from '../../src/app/use-cases/proto.js';

interface FileProto {
  name?: string;
  package?: string;
  dependency?: string[];
}

export interface DescriptorSetOptions {
  /** Per file name (protobufjs names files `<package with _>.proto`): the files it imports. */
  readonly imports?: Record<string, string[]>;
  /** File names left out of the set (to build a set missing its imports). */
  readonly omit?: readonly string[];
}

/** Encodes a FileDescriptorSet for the given .proto files (one package each). */
export function descriptorSetFromProto(protoFiles: readonly string[], opts: DescriptorSetOptions = {}): Buffer {
  const root = new protobuf.Root();
  for (const text of protoFiles) protobuf.parse(text, root, { keepCase: true });
  const set = (
    root as unknown as { toDescriptor(syntax: string): protobuf.Message & { file: FileProto[] } }
  ).toDescriptor('proto3');
  for (const f of set.file) f.dependency = opts.imports?.[f.name ?? ''] ?? [];
  set.file = set.file.filter((f) => !(opts.omit ?? []).includes(f.name ?? ''));
  return Buffer.from(descriptorExt.FileDescriptorSet.encode(set).finish());
}

/** The demo schema the gRPC tests use: a unary and a server-streaming method, plus two uncallable ones. */
export const GREETER_PROTO = `
syntax = "proto3";
package demo.common;
enum Mood { MOOD_UNSPECIFIED = 0; HAPPY = 1; GRUMPY = 2; }
message Money { string currency = 1; int64 units = 2; }
`;

export const GREETER_SERVICE_PROTO = `
syntax = "proto3";
package demo.v1;
message HelloRequest { string user_name = 1; int64 count = 2; demo.common.Mood mood = 3; repeated string tags = 4; demo.common.Money tip = 5; }
message HelloReply { string message = 1; int64 n = 2; demo.common.Mood mood = 3; }
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc SayMany (HelloRequest) returns (stream HelloReply);
  rpc Upload (stream HelloRequest) returns (HelloReply);
  rpc Chat (stream HelloRequest) returns (stream HelloReply);
}
`;

/** Version 2 of the demo: HelloReply's `message` moves to field 7 (a different wire format). */
export const GREETER_SERVICE_PROTO_V2 = GREETER_SERVICE_PROTO.replace(
  'message HelloReply { string message = 1;',
  'message HelloReply { string message = 7;',
);

/** The demo set with its import included (what --include_imports gives). */
export function greeterSet(service: string = GREETER_SERVICE_PROTO): Buffer {
  return descriptorSetFromProto([GREETER_PROTO, service], { imports: { 'demo_v1.proto': ['demo_common.proto'] } });
}

/** The demo set built without --include_imports: demo_v1.proto imports demo_common.proto, which is left out. */
export function greeterSetMissingImport(): Buffer {
  return descriptorSetFromProto([GREETER_PROTO, GREETER_SERVICE_PROTO], {
    imports: { 'demo_v1.proto': ['demo_common.proto'] },
    omit: ['demo_common.proto'],
  });
}

/** A real @grpc/grpc-js client whose messages are encoded with the given descriptor set. */
export interface GreeterTestClient {
  unary(
    method: string,
    request: Record<string, unknown>,
    metadata?: Record<string, string>,
  ): Promise<Record<string, unknown>>;
  serverStream(
    method: string,
    request: Record<string, unknown>,
    metadata?: Record<string, string>,
  ): Promise<Array<Record<string, unknown>>>;
  /** Sends raw bytes as the request of a unary method. */
  unaryRaw(method: string, bytes: Buffer, metadata?: Record<string, string>): Promise<Buffer>;
  clientStream(
    method: string,
    requests: Array<Record<string, unknown>>,
    metadata?: Record<string, string>,
  ): Promise<Record<string, unknown>>;
  close(): void;
}

/** Builds a client for `address` (`host:port`); `method` arguments are `pkg.Service/Method`. */
export function testClient(address: string, descriptorSet: Buffer): GreeterTestClient {
  const parsed = parseDescriptorSet(descriptorSet);
  const methods = new Map(parsed.services.flatMap((s) => s.methods.map((m) => [m.fullName, m] as const)));
  const client = new Client(address, credentials.createInsecure());
  const find = (name: string) => {
    const m = methods.get(name);
    if (m === undefined) throw new Error(`the test descriptor set has no method ${name}`);
    return {
      path: `/${name}`,
      ser: (o: Record<string, unknown>) => Buffer.from(m.requestType.encode(m.requestType.fromObject(o)).finish()),
      de: (b: Buffer) =>
        m.responseType.toObject(m.responseType.decode(b), { longs: String, enums: String, defaults: true }),
    };
  };
  const md = (h: Record<string, string> = {}) => {
    const out = new Metadata();
    for (const [k, v] of Object.entries(h)) out.set(k, v);
    return out;
  };
  return {
    unary: (method, request, metadata) => {
      const m = find(method);
      return new Promise((resolve, reject) =>
        client.makeUnaryRequest(m.path, m.ser, m.de, request, md(metadata), (err, res) =>
          err ? reject(err) : resolve(res!),
        ),
      );
    },
    unaryRaw: (method, bytes, metadata) =>
      new Promise((resolve, reject) =>
        client.makeUnaryRequest(
          `/${method}`,
          (b: Buffer) => b,
          (b: Buffer) => b,
          bytes,
          md(metadata),
          (err, res) => (err ? reject(err) : resolve(res!)),
        ),
      ),
    serverStream: (method, request, metadata) => {
      const m = find(method);
      return new Promise((resolve, reject) => {
        const got: Array<Record<string, unknown>> = [];
        const call = client.makeServerStreamRequest(m.path, m.ser, m.de, request, md(metadata));
        call.on('data', (d: Record<string, unknown>) => got.push(d));
        call.on('error', reject);
        call.on('end', () => resolve(got));
      });
    },
    clientStream: (method, requests, metadata) => {
      const m = find(method);
      return new Promise((resolve, reject) => {
        const call = client.makeClientStreamRequest(m.path, m.ser, m.de, md(metadata), (err, res) =>
          err ? reject(err) : resolve(res!),
        );
        for (const r of requests) call.write(r);
        call.end();
      });
    },
    close: () => client.close(),
  };
}

/** Flow `acme/hello` answering demo.v1.Greeter/SayHello with `hello <user_name>` (the gRPC door tests). */
export const HELLO_FLOW = `---
flowdoc_version: "0.1"
flow: hello
tenant: acme
inbound: grpc
grpc_method: demo.v1.Greeter/SayHello
---

## Step: answer
\`\`\`ntd
{"message": "hello {{ ctx.input.user_name }}"}
\`\`\`
`;
