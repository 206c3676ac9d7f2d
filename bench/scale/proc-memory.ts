/**
 * Memory of a child process read from /proc/<pid>/status (Linux), sampled while it runs: the
 * highest resident set seen (VmRSS) and the kernel's own high-water mark (VmHWM, read on every
 * sample, so the last read before the process exits holds its peak up to that moment).
 */
import { readFileSync } from 'node:fs';

/** A field of /proc/<pid>/status in KiB (`VmRSS`, `VmHWM`); undefined once the process is gone. */
export function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon'): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

export interface MemorySampler {
  /** Highest VmRSS seen so far. MiB. */
  readonly maxRssMiB: number;
  /** Highest RssAnon seen so far: the heap and native allocations, without file-backed pages. MiB. */
  readonly maxAnonMiB: number;
  /** Last VmHWM read (the peak resident set up to that read). MiB. */
  readonly hwmMiB: number;
  /** Starts a new window for maxRssMiB (e.g. once start-up is over). */
  resetMax(): void;
  stop(): void;
}

/** Samples every `everyMs` until stop() (or until the process is gone). */
export function sampleMemory(pid: number, everyMs = 20): MemorySampler {
  let maxRssKb = 0;
  let hwmKb = 0;
  let maxAnonKb = 0;
  const sample = (): void => {
    const rss = procStatusKb(pid, 'VmRSS');
    const anon = procStatusKb(pid, 'RssAnon');
    if (anon !== undefined) maxAnonKb = Math.max(maxAnonKb, anon);
    const hwm = procStatusKb(pid, 'VmHWM');
    if (rss !== undefined) maxRssKb = Math.max(maxRssKb, rss);
    if (hwm !== undefined) hwmKb = hwm;
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    get maxRssMiB() {
      return maxRssKb / 1024;
    },
    get maxAnonMiB() {
      return maxAnonKb / 1024;
    },
    get hwmMiB() {
      return hwmKb / 1024;
    },
    resetMax() {
      maxRssKb = 0;
      maxAnonKb = 0;
      sample();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
