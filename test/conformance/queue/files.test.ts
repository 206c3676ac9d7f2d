// The queue contract's conformance suite against the files of a state directory (FileQueueStore).
import { fileBackend } from './file-backend.js';
import { queueConformance } from './queue.conformance.js';

queueConformance(fileBackend);
