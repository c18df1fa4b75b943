/**
 * The processes of the start command (`npx -y pnpm@10 start`: npm exec, a shell, pnpm, a shell, this
 * launcher), and a watch on them. A supervisor's SIGTERM, or `kill $!`, reaches only the first of
 * them: npm passes it to its shell, which dies without passing it on, and pnpm would live on as an
 * orphan with the server under it. The launcher cannot be told; it can notice. Each process of the
 * chain is watched for keeping its parent: one that ended reparents the next one down.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');

const HAVE_PROC = fs.existsSync('/proc/self/stat');

/** A process's parent and group, or undefined once it has ended (a zombie has ended: it only waits to be reaped). */
function processInfo(pid) {
  if (HAVE_PROC) {
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return undefined;
    }
    // `pid (name) state ppid pgrp …`: the name may hold spaces and parentheses, so read after the last one.
    const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return state === 'Z' || state === 'X' ? undefined : { ppid: Number(ppid), pgid: Number(pgid) };
  }
  const ps = spawnSync('ps', ['-o', 'ppid=,pgid=,stat=', '-p', String(pid)], { encoding: 'utf8' });
  const [ppid, pgid, state = ''] = ps.stdout.trim().split(/\s+/);
  return ps.status !== 0 || ppid === undefined || state.startsWith('Z') ? undefined : { ppid: Number(ppid), pgid: Number(pgid) };
}

/**
 * This process and its ancestors in its own process group, nearest first, each with its parent: the
 * start command as the shell made it (job control gives a command line a group of its own, so the
 * user's shell, which outlives the command, is not in it).
 */
function startCommandChain(pid = process.pid) {
  const self = processInfo(pid);
  if (!self) return [];
  const chain = [{ pid, ppid: self.ppid }];
  for (let next = self.ppid; next > 1; ) {
    const info = processInfo(next);
    if (!info || info.pgid !== self.pgid) break;
    chain.push({ pid: next, ppid: info.ppid });
    next = info.ppid;
  }
  return chain;
}

/** The first process of the chain that ended or lost its parent, if any. */
function brokenLink(chain) {
  return chain.find((link) => processInfo(link.pid)?.ppid !== link.ppid);
}

/** Calls `onBroken` once when a process of the chain ends (checked every `intervalMs`); `stop()` ends the watch. */
function watchChain(chain, onBroken, intervalMs = 500) {
  const timer = setInterval(() => {
    if (!brokenLink(chain)) return;
    clearInterval(timer);
    onBroken();
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

module.exports = { processInfo, startCommandChain, brokenLink, watchChain };
