/**
 * A reference row for `npm run bench:peers`: the peers' contract (POST the body, answer
 * `{"ok":true,"id":<its id>}`) answered straight off `node:net` sockets, with no HTTP parser and
 * no other work. Each request's head is scanned for its end and its `content-length` only; the
 * body is parsed for its id, as every peer does. It is about the most one process on this runtime
 * and machine answers for that contract: a ratio against Node-RED that needs more is out of reach
 * of a server like ours here, whatever its code. Not a conforming HTTP server (no chunked bodies, no
 * header folding): wrk and the harness's probe send neither.
 */

/** Its source, run as its own process (`node <file>`): listens on HOST and PORT as the harness's servers do. */
export const SOCKET_CEILING_SOURCE = `
const net = require('node:net');
const HEAD_END = Buffer.from('\\r\\n\\r\\n');
const LENGTH = /\\r\\ncontent-length:[ \\t]*(\\d+)/i;
function answer(id) {
  const body = JSON.stringify({ ok: true, id });
  return 'HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: ' + Buffer.byteLength(body) + '\\r\\n\\r\\n' + body;
}
const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let out = '';
    for (;;) {
      const end = pending.indexOf(HEAD_END);
      if (end < 0) break;
      const length = LENGTH.exec(pending.toString('latin1', 0, end));
      const total = end + 4 + (length ? Number(length[1]) : 0);
      if (pending.length < total) break;
      let id = null;
      try {
        id = JSON.parse(pending.toString('utf8', end + 4, total)).id;
      } catch {}
      out += answer(id);
      pending = pending.subarray(total);
    }
    if (out !== '') socket.write(out);
  });
  socket.on('end', () => socket.end());
  socket.on('error', () => socket.destroy());
});
const host = process.env.HOST || '127.0.0.1';
server.listen(Number(process.env.PORT || 0), host, () =>
  console.log('listening on http://' + host + ':' + server.address().port),
);
process.on('SIGTERM', () => process.exit(0));
`;
