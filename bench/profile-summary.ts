// Summarises the .cpuprofile files that BENCH_CPU_PROF leaves (one per thread): self time per file or
// package and per function, as a share of each thread's busy time, over the last N seconds of each profile.
// Boot and module loading would otherwise dominate a profile of a short run.
//
//   node --import tsx bench/profile-summary.ts <dir> [last-seconds=10] [skip-tail-seconds=0.5]
//
// Threads busy for less than 0.3 s in the window are skipped (idle actor threads, loader-hook threads).
import fs from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

// `| head` closes the pipe early; that is not an error.
process.stdout.on('error', () => process.exit(0));

const [dir, lastArg, tailArg] = process.argv.slice(2);
if (!dir) {
  console.error('usage: bench/profile-summary.ts <dir> [last-seconds] [skip-tail-seconds]');
  process.exit(2);
}
const lastUs = Number(lastArg ?? 10) * 1e6;
const tailUs = Number(tailArg ?? 0.5) * 1e6;

/** Paths relative to the tree, packages by name: what a reader of the summary can act on. */
function where(url: string): { file: string; group: string } {
  const file = url.replace(/^file:\/\/.*?\/node_modules\//, 'npm:').replace(/^file:\/\/.*?\/(src|bench)\//, '$1/');
  const pkg = /^npm:((?:@[^/]+\/)?[^/]+)/.exec(file);
  return { file, group: pkg ? `npm:${pkg[1]}` : file };
}

const top = (m: Map<string, number>, busy: number, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((v / busy) * 100).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');

for (const name of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const p = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  let t = p.startTime;
  const times = p.timeDeltas.map((d) => (t += d));
  const end = (times[times.length - 1] ?? t) - tailUs;
  const begin = end - lastUs;
  const byFunction = new Map<string, number>();
  const byGroup = new Map<string, number>();
  let busy = 0;
  p.samples.forEach((id, i) => {
    const at = times[i]!;
    if (at < begin || at > end) return;
    const dt = p.timeDeltas[i] ?? 0;
    const f = byId.get(id)!.callFrame;
    if (f.functionName === '(idle)') return;
    busy += dt;
    const { file, group } = f.url ? where(f.url) : { file: '', group: f.functionName };
    const fn = `${f.functionName || '(anonymous)'}${file ? ` ${file}:${f.lineNumber + 1}` : ''}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt);
    byGroup.set(group, (byGroup.get(group) ?? 0) + dt);
  });
  if (busy < 300_000) continue;
  console.log(`\n== ${name}: busy ${(busy / 1e6).toFixed(2)} s of ${((end - begin) / 1e6).toFixed(1)} s`);
  console.log(`-- by file or package\n${top(byGroup, busy, 14)}`);
  console.log(`-- by function (self time)\n${top(byFunction, busy, 22)}`);
}
