import fs from 'node:fs';
import path from 'node:path';

/**
 * `tsx tools/bench/profile.ts <file.cpuprofile> [top]`: where a server's CPU time went during a
 * measured bench run (BENCH_PROFILE=<dir> pnpm bench), as self time per function and per package
 * or source file. For the call tree, open the file in Chrome DevTools (Performance panel).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** `knex@3.3.0…/lib/x.js` for a package, `packages/server/src/x.ts` for our code, `(gc)` for V8's own. */
function ownerOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : `(${functionName})`;
  const packaged = /node_modules\/\.pnpm\/([^/]+)\/node_modules\/(.+)$/.exec(url);
  if (packaged) return (packaged[2] ?? '').replace(/^((?:@[^/]+\/)?[^/]+).*$/, '$1');
  const workspace = url.indexOf('/packages/');
  if (workspace >= 0) return url.slice(workspace + 1);
  return url.replace(/^file:\/\//, '');
}

function summarise(profile: CpuProfile, top: number): string {
  const selfTime = new Map<number, number>();
  for (const [index, nodeId] of profile.samples.entries()) selfTime.set(nodeId, (selfTime.get(nodeId) ?? 0) + (profile.timeDeltas[index] ?? 0));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const nodeById = new Map(profile.nodes.map((node) => [node.id, node]));
  /** A native frame (no URL: writev, a binding…) counts for the nearest JavaScript caller's package. */
  const callerOwnerOf = (id: number): string => {
    for (let current = parentOf.get(id); current !== undefined; current = parentOf.get(current)) {
      const frame = nodeById.get(current)?.callFrame;
      if (frame?.url) return ownerOf(frame.url, frame.functionName);
    }
    return '(no caller)';
  };
  const byFunction = new Map<string, number>();
  const byOwner = new Map<string, number>();
  const byCaller = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const micros = selfTime.get(node.id) ?? 0;
    if (micros === 0) continue;
    total += micros;
    const { functionName, url, lineNumber } = node.callFrame;
    const owner = ownerOf(url, functionName);
    const synthetic = ['(idle)', '(program)', '(garbage collector)', '(root)'].includes(functionName);
    const caller = url || synthetic ? owner : `${callerOwnerOf(node.id)} → ${functionName}`;
    const name = `${functionName || '(anonymous)'}  ${owner}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + micros);
    byCaller.set(caller, (byCaller.get(caller) ?? 0) + micros);
  }
  const busy = total - (byOwner.get('(idle)') ?? 0);
  const table = (entries: Map<string, number>) =>
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, micros]) => `${(micros / 1000).toFixed(0).padStart(8)} ms ${((100 * micros) / total).toFixed(1).padStart(5)} %  ${name}`)
      .join('\n');
  return [
    `sampled ${(total / 1000).toFixed(0)} ms, busy ${(busy / 1000).toFixed(0)} ms (${((100 * busy) / total).toFixed(0)} %)`,
    '',
    'self time by package or file',
    table(byOwner),
    '',
    'native frames by their JavaScript caller',
    table(new Map([...byCaller].filter(([name]) => name.includes(' → ')))),
    '',
    'self time by function',
    table(byFunction),
  ].join('\n');
}

const [file, top = '25'] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx tools/bench/profile.ts <file.cpuprofile> [top]');
  process.exit(2);
}
console.log(`${path.basename(file)}\n${summarise(JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile, Number(top))}`);
