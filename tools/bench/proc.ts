import fs from 'node:fs';

/**
 * What Linux's /proc says about the processes the bench starts and the machine it runs on: CPU time
 * and resident memory. Elsewhere the machine's figures are undefined and a process's are zero.
 */

/** /proc's clock ticks per second (USER_HZ), 100 on Linux everywhere that matters. */
const MICROSECONDS_PER_TICK = 1_000_000 / 100;

/** CPU time in µs: all of it, and the kernel's part (system calls, and on loopback the receiving side of TCP too). */
export interface CpuTime {
  total: number;
  system: number;
}

/** A process and, with WEB_CONCURRENCY above 1, the server processes it forked. */
function processTree(pid: number): number[] {
  try {
    const children = fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((task) => fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    return [pid, ...children.flatMap(processTree)];
  } catch {
    return [];
  }
}

/** The CPU time a process and its children have used so far (user + system, fields 14 and 15 of /proc/<pid>/stat). */
export function cpuTimeOfTree(pid: number): CpuTime {
  let user = 0;
  let system = 0;
  for (const each of processTree(pid)) {
    try {
      const stat = fs.readFileSync(`/proc/${each}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      user += Number(fields[11]);
      system += Number(fields[12]);
    } catch {
      // A process that ended meanwhile is not counted: none should.
    }
  }
  return { total: (user + system) * MICROSECONDS_PER_TICK, system: system * MICROSECONDS_PER_TICK };
}

/** The parent of a process (field 4 of /proc/<pid>/stat); undefined once it has ended. */
export function parentOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** VmRSS of a running process, in MB. */
export function residentMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** Busy and total CPU time of the whole machine so far (the first line of /proc/stat). */
export function machineCpu(): { busy: number; total: number } | undefined {
  try {
    const fields = (fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
    const [, , , idle = 0, iowait = 0] = fields;
    const total = fields.reduce((sum, value) => sum + value, 0);
    return { busy: total - idle - iowait, total };
  } catch {
    return undefined;
  }
}
