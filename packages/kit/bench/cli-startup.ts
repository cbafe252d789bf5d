/**
 * Start-up of the CLIs built on the kit's app shell, against bare `node -e 0` (the floor: the
 * runtime itself) and against importing the whole kit index (what a command paid when it loaded
 * Fastify, undici and pg to print a list). Each command runs as a child process, as a user runs
 * it; the figure is the median wall time of N runs.
 *
 *   npm run bench:startup -w packages/kit -- --runs=15
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', '..', '..')
const runs = Number(process.argv.find((a) => a.startsWith('--runs='))?.slice(7) ?? 15)
const dir = mkdtempSync(join(tmpdir(), 'cli-startup-'))
const node = process.execPath
const app = (name: string) => join(root, 'apps', name, 'src', 'main.ts')

// Databases for the list commands (created once, outside the measurement).
execFileSync(node, [app('edgegate'), 'migrate', '--database', `sqlite:${join(dir, 'e.db')}`])
execFileSync(node, [
  '--input-type=module',
  '-e',
  `import { openStore } from ${JSON.stringify(join(root, 'apps/sshproxy/src/db/index.ts'))}; await (await openStore(${JSON.stringify(join(dir, 's.db'))})).close()`,
])

const cases: [string, string[]][] = [
  ['node -e 0 (baseline)', ['-e', '0']],
  [
    'import @gatehouse/kit (whole index)',
    ['--input-type=module', '-e', `await import(${JSON.stringify(join(root, 'packages/kit/src/index.ts'))})`],
  ],
  ['edgegate --help', [app('edgegate'), '--help']],
  ['edgegate node list (SQLite)', [app('edgegate'), 'node', 'list', '--database', `sqlite:${join(dir, 'e.db')}`]],
  ['edgegate status (SQLite)', [app('edgegate'), 'status', '--database', `sqlite:${join(dir, 'e.db')}`]],
  ['sshproxy --help', [app('sshproxy'), '--help']],
  ['sshproxy list', [app('sshproxy'), 'list', '--db', join(dir, 's.db')]],
  ['dnsctl --help', [app('dnsctl'), '--help']],
]

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

console.log(
  `machine: ${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores; node ${process.version}; ${runs} runs each`,
)
const results: [string, number][] = []
for (const [label, args] of cases) {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    const r = spawnSync(node, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NO_COLOR: '1' } })
    times.push(performance.now() - t)
    if (r.status !== 0) throw new Error(`${label} exited ${r.status}: ${r.stderr}`)
  }
  results.push([label, median(times)])
}
const base = results[0]![1]
console.log(`${'command'.padEnd(38)} ${'median ms'.padStart(10)} ${'x node -e 0'.padStart(12)}`)
for (const [label, ms] of results) {
  console.log(`${label.padEnd(38)} ${ms.toFixed(1).padStart(10)} ${(ms / base).toFixed(2).padStart(12)}`)
}
rmSync(dir, { recursive: true, force: true })
