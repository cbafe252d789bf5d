/**
 * Start-up of the CLIs built on the kit's app shell, against bare `node -e 0` (the floor: the
 * runtime itself) and against importing the whole kit index (what a command paid when it loaded
 * Fastify, undici and pg to print a list). Each command runs as a child process through its
 * bin/<app> launcher, as a user runs it. Figures: the median wall time of N runs; the CPU time
 * (user + system, of the launcher and Node, from bash's `times` over N more runs), which a
 * machine shared with other work disturbs far less than wall time; and the peak memory (max
 * RSS) of one more run.
 *
 * The binaries keep Node's module compile cache in the user's cache folder (the launchers set
 * NODE_COMPILE_CACHE; kit/src/cli/compile-cache.ts when run with node directly); the bench gives
 * them a fresh folder, warms it with one run of each command, and measures two rows with the
 * cache off (NODE_DISABLE_COMPILE_CACHE=1) and one without the single-file dependency bundles
 * (GATEHOUSE_NO_BUNDLES=1, kit/src/cli/module-bundles.ts) for comparison.
 *
 *   npm run bench:startup -w packages/kit -- --runs=15
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestCa } from '@gatehouse/testkit'

const root = join(import.meta.dirname, '..', '..', '..')
const runs = Number(process.argv.find((a) => a.startsWith('--runs='))?.slice(7) ?? 15)
const dir = mkdtempSync(join(tmpdir(), 'cli-startup-'))
const node = process.execPath
const app = (name: string) => join(root, 'apps', name, 'src', 'main.ts')
const bin = (name: string) => join(root, 'bin', name)
const env = { ...process.env, NO_COLOR: '1', GATEHOUSE_HOME: dir, NODE_COMPILE_CACHE: join(dir, 'compile-cache') }
delete (env as Record<string, string | undefined>).NODE_DISABLE_COMPILE_CACHE
const cold = { ...env, NODE_DISABLE_COMPILE_CACHE: '1' }

// Databases for the list commands (created once, outside the measurement).
const edb = `sqlite:${join(dir, 'e.db')}`
const ndb = `sqlite:${join(dir, 'n.db')}`
execFileSync(node, [app('edgegate'), 'migrate', '--database', edb], { env })
execFileSync(node, [app('notify'), 'migrate', '--database', ndb], { env })
for (const [gate, file] of [
  ['sshproxy', 's.db'],
  ['tlsgate', 't.db'],
]) {
  execFileSync(node, [
    '--input-type=module',
    '-e',
    `import { openStore } from ${JSON.stringify(join(root, `apps/${gate}/src/db/index.ts`))}; await (await openStore(${JSON.stringify(join(dir, file!))})).close()`,
  ])
}

// A TLS server answering `GET /readyz` 200 with a P-256 certificate (edgegate's own key type,
// which testkit's CA issues), in a child process since the bench blocks in spawnSync: `edgegate
// status` against a control plane that answers costs a TLS handshake the closed port does not.
const probeCa = createTestCa()
const probeCert = probeCa.issueServer(['127.0.0.1'])
const probeServer = spawn(
  node,
  [
    '-e',
    `
  const { readFileSync } = require('node:fs')
  const server = require('node:tls').createServer({ key: readFileSync(process.argv[1]), cert: readFileSync(process.argv[2]), ALPNProtocols: ['http/1.1'] }, (socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\\r\\ncontent-length: 0\\r\\nconnection: close\\r\\n\\r\\n'))
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1', () => {
    const port = server.address().port
    // serve's control socket (apps/edgegate/src/control-socket.ts): the same answer, naming
    // the HTTPS address it stands for, in plain HTTP.
    require('node:net').createServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 200 OK\\r\\nedgegate-listen: https://127.0.0.1:' + port + '\\r\\ncontent-length: 0\\r\\nconnection: close\\r\\n\\r\\n'))
      socket.on('error', () => {})
    }).listen(process.argv[3], () => console.log(port))
  })
`,
    probeCert.keyPath,
    probeCert.certPath,
    join(dir, 'control.sock'),
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
)
const probePort = await new Promise<number>((resolve, reject) => {
  probeServer.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())))
  probeServer.once('exit', (code) => reject(new Error(`the probe server exited ${code}`)))
})
// Neither the server nor its pipe keeps the bench alive; the bench's exit ends the server.
probeServer.unref()
probeServer.stdout.destroy()
process.on('exit', () => {
  probeServer.kill()
  probeCa.remove()
})

/** A row: what it runs (`node` with arguments, or a launcher) and in which environment. */
type Case = [label: string, command: string, args: string[], env: NodeJS.ProcessEnv]
const cases: Case[] = [
  ['node -e 0 (baseline)', node, ['-e', '0'], env],
  [
    'import @gatehouse/kit (whole index)',
    node,
    ['--input-type=module', '-e', `await import(${JSON.stringify(join(root, 'packages/kit/src/index.ts'))})`],
    env,
  ],
  ['edgegate --help, compile cache off', bin('edgegate'), ['--help'], cold],
  ...['edgegate', 'sshproxy', 'tlsgate', 'websignal', 'artsvc', 'dnsctl', 'notify'].map(
    (name): Case => [`${name} --help`, bin(name), ['--help'], env],
  ),
  ['edgegate node list (SQLite), cache off', bin('edgegate'), ['node', 'list', '--database', edb], cold],
  [
    'edgegate node list (SQLite), no bundles',
    bin('edgegate'),
    ['node', 'list', '--database', edb],
    { ...env, GATEHOUSE_NO_BUNDLES: '1' },
  ],
  ['edgegate node list (SQLite)', bin('edgegate'), ['node', 'list', '--database', edb], env],
  ['edgegate status (SQLite)', bin('edgegate'), ['status', '--database', edb], env],
  [
    'edgegate status, a server answering',
    bin('edgegate'),
    ['status', '--database', edb, '--listen', `127.0.0.1:${probePort}`],
    env,
  ],
  [
    'edgegate status, via control socket',
    bin('edgegate'),
    ['status', '--database', edb, '--listen', `127.0.0.1:${probePort}`, '--control-socket', join(dir, 'control.sock')],
    env,
  ],
  ['sshproxy list', bin('sshproxy'), ['list', '--db', join(dir, 's.db')], env],
  [
    'sshproxy status',
    bin('sshproxy'),
    ['status', '--db', join(dir, 's.db'), '--route', '127.0.0.1:2222=127.0.0.1:22'],
    env,
  ],
  ['tlsgate list', bin('tlsgate'), ['list', '--db', join(dir, 't.db')], env],
  [
    'tlsgate status',
    bin('tlsgate'),
    ['status', '--db', join(dir, 't.db'), '--route', '127.0.0.1:8443=127.0.0.1:443'],
    env,
  ],
  ['notify token list (SQLite)', bin('notify'), ['token', 'list', '--database', ndb], env],
]

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

/** Mean CPU time (user + system) of one run, in ms: N runs in one bash, its children's total from `times`. */
function cpuMs(command: string, args: string[], caseEnv: NodeJS.ProcessEnv): number {
  const r = spawnSync(
    'bash',
    ['-c', `for i in $(seq ${runs}); do "$@" >/dev/null 2>&1 </dev/null; done; times`, 'bash', command, ...args],
    { env: caseEnv, encoding: 'utf8' },
  )
  // `times` prints the shell's own user/system times, then its children's: "0m0.120s 0m0.030s".
  const children = r.stdout.trim().split('\n')[1] ?? ''
  const seconds = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]))
  return (((seconds[0] ?? Number.NaN) + (seconds[1] ?? Number.NaN)) * 1000) / runs
}

/** Peak resident memory of one run, in MiB (GNU time's %M when present, else not measured). */
function peakMiB(command: string, args: string[], caseEnv: NodeJS.ProcessEnv): number | undefined {
  const r = spawnSync('/usr/bin/time', ['-f', '@@rss %M', command, ...args], { env: caseEnv, encoding: 'utf8' })
  const kib = /@@rss (\d+)/.exec(r.stderr ?? '')?.[1]
  return kib ? Number(kib) / 1024 : undefined
}

console.log(
  `machine: ${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores; node ${process.version}; ${runs} runs each; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
// Warm the compile cache: one run of every command first.
for (const [, command, args, caseEnv] of cases) spawnSync(command, args, { env: caseEnv, stdio: 'ignore' })
const results: [string, number, number, number | undefined][] = []
for (const [label, command, args, caseEnv] of cases) {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    const r = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: caseEnv })
    times.push(performance.now() - t)
    if (r.status !== 0) throw new Error(`${label} exited ${r.status}: ${r.stderr}`)
  }
  results.push([label, median(times), cpuMs(command, args, caseEnv), peakMiB(command, args, caseEnv)])
}
const [, base, baseCpu] = results[0]!
console.log(
  `${'command'.padEnd(40)} ${'wall ms'.padStart(8)} ${'x'.padStart(6)} ${'CPU ms'.padStart(8)} ${'x'.padStart(6)} ${'peak MiB'.padStart(9)}`,
)
for (const [label, ms, cpu, mib] of results) {
  console.log(
    `${label.padEnd(40)} ${ms.toFixed(1).padStart(8)} ${(ms / base).toFixed(2).padStart(6)} ${cpu.toFixed(1).padStart(8)} ${(cpu / baseCpu).toFixed(2).padStart(6)} ${(mib?.toFixed(1) ?? '-').padStart(9)}`,
  )
}
rmSync(dir, { recursive: true, force: true })
