/** Worker thread of the event log: SQLite commits and file appends happen here, off the event loop. */
import { parentPort, workerData } from 'node:worker_threads';
import { EventLogSink } from './event-log-sink.js';
import type { WorkerReply, WorkerRequest, WorkerSetup } from './event-log-sink.js';

const port = parentPort;
if (port === null) throw new Error('event-log-worker.js must run as a worker thread');
const sink = new EventLogSink(workerData as WorkerSetup);

port.on('message', (msg: WorkerRequest) => {
  const done = (error?: unknown, retention?: WorkerReply['retention']): void => {
    const reply: WorkerReply = {
      id: msg.id,
      error: error === undefined ? undefined : String((error as Error)?.message ?? error),
      retention,
    };
    port.postMessage(reply);
  };
  if (msg.type === 'stage') sink.stage(msg.chunk);
  else if (msg.type === 'write') sink.write(msg.batch).then(() => done(), done);
  else if (msg.type === 'aggregates') sink.writeAggregates(msg.aggregates).then(() => done(), done);
  else if (msg.type === 'retain') sink.retain(msg.request).then((stats) => done(undefined, stats), done);
  else if (msg.type === 'stop-retention') sink.stopRetention();
  else sink.close().then(() => done(), done);
});
