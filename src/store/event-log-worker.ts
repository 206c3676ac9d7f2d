/** Worker thread of the event log: SQLite commits and file appends happen here, off the event loop. */
import { parentPort, workerData } from 'node:worker_threads';
import { EventLogSink } from './event-log-sink.js';
import type { WorkerReply, WorkerRequest, WorkerSetup } from './event-log-sink.js';

const port = parentPort;
if (port === null) throw new Error('event-log-worker.js must run as a worker thread');
const sink = new EventLogSink(workerData as WorkerSetup);

port.on('message', (msg: WorkerRequest) => {
  const done = (error?: unknown): void => {
    const reply: WorkerReply = { id: msg.id, error: error === undefined ? undefined : String((error as Error)?.message ?? error) };
    port.postMessage(reply);
  };
  if (msg.type === 'write') sink.write(msg.batch).then(() => done(), done);
  else sink.close().then(() => done(), done);
});
