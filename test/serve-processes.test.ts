/**
 * `svc serve --processes <n>` (issue 34): n full server processes on one port (SO_REUSEPORT), a
 * member that dies replaced, all stopped together, none outliving its group (kill -9 of the
 * group's process included). Black-box: the real binary, real processes, the kernel's own
 * spreading of connections (read back with `ss`, which names the process holding each one).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { DELIVER_STEP, startDeliveryBackend } from './helpers/delivery-backend.js';
import { flowSource, tenantWithKey, writeBacklog } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { startCli } from './helpers/cli-child.js';
import { makeSandbox, startServer, svc } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** GET /health on a fresh connection each time (so the kernel picks a listener for each). */
function health(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The process ids holding established connections on `port` (the server side), by `ss`. */
function pidsServing(port: number): Set<number> {
  const r = spawnSync('ss', ['-Htnp', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' });
  return new Set([...r.stdout.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])));
}

const memberPids = (out: string): number[] => {
  const m = /process ids ([\d, ]+);/.exec(out);
  return m === null ? [] : m[1]!.split(', ').map(Number);
};

describe('svc serve --processes', () => {
  it('two processes share the port and both take connections; one killed is replaced; SIGTERM stops all', async () => {
    const sb = makeSandbox();
    const server = await startServer(sb, ['--processes', '2']);
    try {
      await until('both boot blocks', () => (server.output().match(/listening on/g) ?? []).length >= 2);
      const [first, second] = memberPids(server.output());
      assert.ok(first !== undefined && second !== undefined && alive(first) && alive(second), server.output());
      // Both members print the same URL: one port.
      const urls = new Set([...server.output().matchAll(/listening on (http:\/\/\S+)/g)].map((m) => m[1]));
      assert.deepEqual([...urls], [server.url]);

      // Connections held open at once (a request head begun, not ended: each is accepted and
      // waits): the kernel spreads them over both listeners.
      const sockets = await Promise.all(
        Array.from(
          { length: 24 },
          () =>
            new Promise<Socket>((resolve, reject) => {
              const socket = connect(server.port, '127.0.0.1', () => {
                socket.write('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n');
                resolve(socket);
              });
              socket.on('error', reject);
            }),
        ),
      );
      let serving = new Set<number>();
      await until(
        'both members to hold connections',
        () => {
          serving = pidsServing(server.port);
          return serving.has(first) && serving.has(second);
        },
        5000,
      ).catch(() => undefined);
      for (const s of sockets) s.destroy();
      assert.ok(serving.has(first) && serving.has(second), `connections held by ${[...serving].join(', ')}`);

      // kill -9 of one member: the other answers meanwhile, and the group starts another.
      process.kill(first, 'SIGKILL');
      await until('the dead member to go', () => !alive(first));
      for (let i = 0; i < 20; i++) assert.equal(await health(server.port), 200);
      await until('the restart line', () => /ended \(signal SIGKILL\).*starting another in 1 s/.test(server.stderr()));
      await until('a third boot block', () => (server.output().match(/listening on/g) ?? []).length >= 3);
      for (let i = 0; i < 10; i++) assert.equal(await health(server.port), 200);

      const replacement = Number(/process (\d+) started in slot 0/.exec(server.stderr())?.[1]);
      assert.ok(alive(replacement), server.stderr());

      // SIGTERM to the group: it and every member end, cleanly.
      assert.equal(await server.stop(), 0, server.stderr());
      await until('every member to end', () => !alive(second) && !alive(replacement), 10_000);
    } finally {
      await server.kill9();
      sb.cleanup();
    }
  });

  it('two processes drain 4 backlogged queues: every message once, each queue in order (one worker per queue across them)', async () => {
    const sb = makeSandbox();
    const backend = await startDeliveryBackend();
    const queues = ['q0', 'q1', 'q2', 'q3'];
    const perQueue = 250;
    try {
      tenantWithKey(sb);
      for (const q of queues) deployFlow(sb, flowSource(q, ['effects: [http_egress]'], DELIVER_STEP));
      await writeBacklog(
        sb,
        queues.map((q) => ({
          tenant: 'acme',
          flow: q,
          message: (i: number) => ({ correlationId: `${q}-${i}`, payload: { id: `${q}-${i}` } }),
        })),
        perQueue,
      );
      const server = await startServer(sb, ['--processes', '2'], { BACKEND_URL: backend.url });
      try {
        const total = queues.length * perQueue;
        await waitFor(`${total} deliveries`, () => backend.firstDelivered.length === total, 60_000, 50);
      } finally {
        assert.equal(await server.stop(), 0, server.stderr());
      }
      for (const q of queues) {
        const ids = Array.from({ length: perQueue }, (_, i) => `${q}-${i}`);
        assert.deepEqual(
          backend.firstDelivered.filter((id) => id.startsWith(`${q}-`)),
          ids,
          `${q} in order`,
        );
        assert.deepEqual(
          ids.filter((id) => backend.delivered.get(id) !== 1),
          [],
          `${q}: each delivered once`,
        );
      }
    } finally {
      await backend.close();
      sb.cleanup();
    }
  });

  it('a Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops every member cleanly: exit 0', async () => {
    const sb = makeSandbox();
    // Its own process group, as a shell gives a foreground job; stop() signals the whole group.
    const group = startCli(sb, ['serve', '--host', '127.0.0.1', '--port', '0', '--db', sb.db, '--processes', '2'], {
      detached: true,
    });
    try {
      await until('both boot blocks', () => (group.stdout().match(/listening on/g) ?? []).length >= 2);
      const pids = memberPids(group.stdout());
      // Both streams on failure: a member's own log lines (shutdown failed ...) go to stdout.
      assert.equal(await group.stop('SIGINT'), 0, `${group.stderr()}\n${group.stdout()}`);
      await until('both members to end', () => pids.every((p) => !alive(p)), 10_000);
      assert.doesNotMatch(group.stderr(), /did not stop cleanly/);
    } finally {
      await group.stop('SIGKILL');
      sb.cleanup();
    }
  });

  it("no member outlives its group's process, kill -9 of it included", async () => {
    const sb = makeSandbox();
    const server = await startServer(sb, ['--processes', '2']);
    try {
      await until('both boot blocks', () => (server.output().match(/listening on/g) ?? []).length >= 2);
      const pids = memberPids(server.output());
      assert.equal(pids.length, 2);
      await server.kill9();
      await until('both members to stop on their own', () => pids.every((p) => !alive(p)), 15_000);
    } finally {
      await server.kill9();
      sb.cleanup();
    }
  });

  it('refuses --metrics on the shared port (exit 2) and a bad count (exit 1), starting nothing', () => {
    const sb = makeSandbox();
    try {
      const metrics = svc(sb, ['serve', '--db', sb.db, '--port', '0', '--processes', '2', '--metrics']);
      assert.equal(metrics.code, 2, metrics.stderr);
      assert.match(metrics.stderr, /--metrics-port <p>/);
      const bad = svc(sb, ['serve', '--db', sb.db, '--port', '0', '--processes', 'many']);
      assert.equal(bad.code, 1, bad.stderr);
      assert.match(bad.stderr, /--processes must be a whole number from 1 to 256, or auto/);
    } finally {
      sb.cleanup();
    }
  });
});
