/**
 * A TCP proxy on loopback in front of a server (PostgreSQL in the store tests): `cut()` drops every
 * connection and refuses new ones, as a lost network or a stopped database would, for the code
 * behind the proxy only; `restore()` accepts again on the same port.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export class TcpProxy {
  readonly #targetHost: string;
  readonly #targetPort: number;
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;

  private constructor(host: string, port: number) {
    this.#targetHost = host;
    this.#targetPort = port;
  }

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const p = new TcpProxy(targetHost, targetPort);
    await p.restore();
    return p;
  }

  get port(): number {
    return this.#port;
  }

  /** Closes every proxied connection and the listening socket. */
  async cut(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    const server = this.#server;
    this.#server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again (on the first start: on a free port; afterwards: on the same one). */
  async restore(): Promise<void> {
    if (this.#server !== undefined) return;
    const server = createServer((client) => {
      const upstream = connect(this.#targetPort, this.#targetHost);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    this.#port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  async close(): Promise<void> {
    await this.cut();
  }
}
