/**
 * Where a server's long busy stretches go: the samples of a V8 CPU profile grouped into runs
 * without idle time (one run holds the event loop; everything waiting on I/O waits for it), and
 * the functions inside runs of at least THRESHOLD ms, by self and inclusive time. Optionally only
 * the window between the first and last sample under a function (e.g. the ingest phase).
 *
 *   npm run --silent profile:stretches -- PROFILE [THRESHOLD_MS=8] [WINDOW_FUNCTION]
 */
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const [file, thresholdArg, windowFunction] = process.argv.slice(2)
if (!file) {
  process.stderr.write('usage: npm run --silent profile:stretches -- PROFILE [THRESHOLD_MS] [WINDOW_FUNCTION]\n')
  process.exit(2)
}
const threshold = Number(thresholdArg ?? 8) * 1000
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const label = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`
const ancestors = (id: number): ProfileNode[] => {
  const out: ProfileNode[] = []
  for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) out.push(byId.get(x)!)
  return out
}

let from = 0
let to = profile.samples.length - 1
if (windowFunction) {
  const inside = (id: number) => ancestors(id).some((n) => n.callFrame.functionName === windowFunction)
  from = profile.samples.findIndex(inside)
  to = profile.samples.findLastIndex(inside)
  if (from < 0) throw new Error(`no sample under ${windowFunction}`)
}

const runs: { us: number; samples: [number, number][] }[] = []
let run: (typeof runs)[number] | undefined
for (let i = from; i <= to; i++) {
  const id = profile.samples[i]!
  const us = profile.timeDeltas[i + 1] ?? 0
  if (byId.get(id)!.callFrame.functionName === '(idle)') {
    if (run) runs.push(run)
    run = undefined
    continue
  }
  run ??= { us: 0, samples: [] }
  run.us += us
  run.samples.push([id, us])
}
if (run) runs.push(run)
const long = runs.filter((r) => r.us >= threshold)
const selfTime = new Map<string, number>()
const inclusive = new Map<string, number>()
let total = 0
for (const r of long)
  for (const [id, us] of r.samples) {
    total += us
    const own = label(byId.get(id)!)
    selfTime.set(own, (selfTime.get(own) ?? 0) + us)
    for (const name of new Set(ancestors(id).map(label))) inclusive.set(name, (inclusive.get(name) ?? 0) + us)
  }
const top = (m: Map<string, number>, k: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([name, us]) => `${((100 * us) / total).toFixed(1).padStart(5)} %  ${name}`)
    .join('\n')
const longest = long
  .map((r) => r.us / 1000)
  .sort((a, b) => b - a)
  .slice(0, 20)
process.stdout.write(
  `${runs.length} busy runs, ${long.length} of at least ${threshold / 1000} ms (${(total / 1000).toFixed(0)} ms in all); longest: ${longest.map((ms) => ms.toFixed(1)).join(' ')}\n` +
    `\nself time inside them:\n${top(selfTime, 25)}\n\ninclusive time inside them:\n${top(inclusive, 40)}\n`,
)
