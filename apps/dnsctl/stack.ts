/**
 * `npm start`: a private knotd (its own config, control socket and zone folder under
 * ctx.dataDir, DNS on 127.0.0.1:8054) and dnsctl on 127.0.0.1:8053 managing the
 * example zone `example.test`, plus two Knot Resolver (kresd) processes in front of it that share
 * 127.0.0.1:8055 and enforce the compiled blocklist (the demo denies `blocked.example`; a refresh
 * reloads them in turn, so one always answers), and the web console on 127.0.0.1:8057 (sign in
 * with `bin/dnsctl console`).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import type { StartStack } from '../../packages/kit/src/stack.ts'
import {
  ensurePortFree,
  ensureUdpPortFree,
  StackError,
  type SupervisedChild,
  shownPath,
  supervise,
  waitHttp,
} from '../../packages/kit/src/stack-ready.ts'

const HOST = '127.0.0.1'
const API_PORT = 8053
// Fixed (not a free port picked per start) so `kdig -p 8054` keeps working across restarts.
const DNS_PORT = 8054
// kresd: the resolver address users query (shared by both processes), and each process's own
// address the refresh job checks its reload on.
const RESOLVER_PORT = 8055
const RESOLVER_INSTANCE_PORTS = [8056, 8058]
const CONSOLE_PORT = 8057
const EXAMPLE = `$ORIGIN example.test.
$TTL 3600
@ IN SOA ns1 hostmaster 1 3600 900 604800 300
@ IN NS ns1
ns1 IN A 127.0.0.1
www 300 IN A 192.0.2.10
`

async function until(what: string, check: () => Promise<boolean>, child: ChildProcess, logFile: string) {
  const deadline = Date.now() + 20_000
  while (!(await check().catch(() => false))) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new StackError(`dnsctl: ${what} exited during startup; see ${logFile}`)
    if (Date.now() > deadline) throw new StackError(`dnsctl: ${what} did not start within 20 s; see ${logFile}`)
    await delay(100)
  }
}

/**
 * One kresd process: DNS on the shared `port` (and `instancePort` for the refresh job), the
 * shared cache, its own compiled RPZ watched, everything else stubbed to knotd. The STUB rule is
 * a chain action before the RPZ (policy.STUB alone ends policy evaluation, and so does the RPZ's
 * rpz-passthru): allowed names under a blocked parent go to knotd too. The closing PASS ends
 * evaluation before kresd's built-in special-use rules, which would answer all of `test.` NXDOMAIN.
 * See the README.
 */
function kresdConfig(cacheDir: string, port: number, instancePort: number, rpzFile: string, knotPort: number) {
  return `net.listen('127.0.0.1', ${port}, { kind = 'dns' })
net.listen('127.0.0.1', ${instancePort}, { kind = 'dns' })
modules = { 'stats', 'policy' }
cache.open(10*MB, 'lmdb://${cacheDir}')
local stub = policy.STUB('127.0.0.1@${knotPort}')
policy.add(policy.all(function(state, req) stub(state, req) return nil end))
policy.add(policy.rpz(policy.DENY, '${rpzFile}', true))
policy.add(policy.all(policy.PASS))
`
}

const EMPTY_RPZ = '$TTL 60\n@ IN SOA localhost. nobody.invalid. 1 3600 900 86400 60\n'

/** Put `blocked.example` on the deny list (once) and compile the blocklist, as an operator would. */
async function denyDemoName(ctx: Parameters<StartStack>[0], API: string, env: NodeJS.ProcessEnv) {
  const config = (await (await fetch(`${API}/v1/blocklists/config`)).json()) as {
    sources: string[]
    allow: string[]
    deny: string[]
    revision: string
  }
  if (!config.deny.includes('blocked.example')) {
    const res = await fetch(`${API}/v1/blocklists/config`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'if-match': `"${config.revision}"` },
      body: JSON.stringify({ sources: config.sources, allow: config.allow, deny: [...config.deny, 'blocked.example'] }),
    })
    if (!res.ok) ctx.log(`setting the demo deny list failed: ${await res.text()}`)
  }
  const refresh = spawn(ctx.node, [join(import.meta.dirname, 'src', 'main.ts'), 'refresh', 'blocklists'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  refresh.stdout.on('data', (d: Buffer) => {
    output += d
  })
  refresh.stderr.on('data', (d: Buffer) => {
    output += d
  })
  const code = await new Promise<number | null>((resolve) => refresh.once('exit', resolve))
  if (code !== 0) ctx.log(`dnsctl refresh blocklists failed: ${output.trim()}`)
}

export const startStack: StartStack = async (ctx) => {
  const knotDir = join(ctx.dataDir, 'knot')
  const runDir = join(knotDir, 'run')
  const zonesDir = join(knotDir, 'zones')
  for (const d of [runDir, join(knotDir, 'db'), zonesDir]) mkdirSync(d, { recursive: true })
  const port = ctx.port(DNS_PORT)
  const apiPort = ctx.port(API_PORT)
  const API = `http://${HOST}:${apiPort}`
  await ensurePortFree('dnsctl', HOST, apiPort, 'API')
  const consolePort = ctx.port(CONSOLE_PORT)
  await ensurePortFree('dnsctl', HOST, consolePort, 'web console')
  await ensurePortFree('dnsctl', HOST, port, 'DNS (knotd)')
  await ensureUdpPortFree('dnsctl', HOST, port, 'DNS (knotd)')
  const socket = join(runDir, 'knot.sock')
  const configFile = join(knotDir, 'knot.conf')
  writeFileSync(
    configFile,
    `server:\n  listen: 127.0.0.1@${port}\n  rundir: ${runDir}\ndatabase:\n  storage: ${join(knotDir, 'db')}\ncontrol:\n  listen: ${socket}\nlog:\n  - target: stderr\n    any: info\ntemplate:\n  - id: default\n    storage: ${zonesDir}\n    file: "%s.zone"\n    zonefile-sync: -1\n    zonefile-load: whole\n    journal-content: none\n    semantic-checks: on\n`,
  )
  const knotLogFile = join(knotDir, 'knotd.log')
  const knotLog = createWriteStream(knotLogFile, { flags: 'a' })
  const knotd = spawn('/usr/sbin/knotd', ['-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] })
  knotd.stdout.pipe(knotLog)
  knotd.stderr.pipe(knotLog)
  const knot = supervise(knotd, { what: 'knotd', log: ctx.log, logFile: knotLogFile })
  await until('knotd', async () => existsSync(socket), knotd, knotLogFile)

  // Two kresd processes on one address (SO_REUSEPORT), each in its own folder with its own RPZ
  // file and control socket, sharing one cache: the refresh job reloads them one at a time.
  const kresdDir = join(ctx.dataDir, 'kresd')
  const cacheDir = join(kresdDir, 'cache')
  mkdirSync(cacheDir, { recursive: true })
  const resolverPort = ctx.port(RESOLVER_PORT)
  const instancePorts = RESOLVER_INSTANCE_PORTS.map((p) => ctx.port(p))
  await ensureUdpPortFree('dnsctl', HOST, resolverPort, 'DNS (kresd)')
  for (const p of instancePorts) await ensureUdpPortFree('dnsctl', HOST, p, 'DNS (kresd instance)')
  const instances = instancePorts.map((instancePort, n) => {
    const workDir = join(kresdDir, `instance-${n}`)
    mkdirSync(join(workDir, 'rpz'), { recursive: true })
    return { instancePort, workDir, rpzFile: join(workDir, 'rpz', 'blocklist.rpz') }
  })
  const kresds: SupervisedChild[] = []
  for (const [n, { instancePort, workDir, rpzFile }] of instances.entries()) {
    if (!existsSync(rpzFile)) writeFileSync(rpzFile, EMPTY_RPZ)
    const conf = join(workDir, 'kresd.conf')
    writeFileSync(conf, kresdConfig(cacheDir, resolverPort, instancePort, rpzFile, port))
    const kresdLogFile = join(workDir, 'kresd.log')
    const kresdLog = createWriteStream(kresdLogFile, { flags: 'a' })
    const kresd = spawn('/usr/sbin/kresd', ['-n', '-c', conf, workDir], { stdio: ['ignore', 'pipe', 'pipe'] })
    kresd.stdout.pipe(kresdLog)
    kresd.stderr.pipe(kresdLog)
    kresds.push(supervise(kresd, { what: `kresd instance ${n}`, log: ctx.log, logFile: kresdLogFile }))
  }

  const dnsctlLogFile = join(ctx.dataDir, 'dnsctl.log')
  const dnsctlLog = createWriteStream(dnsctlLogFile, { flags: 'a' })
  // The server reads this file (DNSCTL_CONFIG) and so do bin/dnsctl and its refresh job by default.
  const dnsctlConfig = join(ctx.dataDir, 'config.json')
  writeFileSync(
    dnsctlConfig,
    `${JSON.stringify(
      {
        listen: `${HOST}:${apiPort}`,
        console: { listen: `${HOST}:${consolePort}` },
        stateDir: join(ctx.dataDir, 'state'),
        knot: { socket, zonesDir, address: `${HOST}:${port}` },
        resolver: {
          rpzFiles: instances.map((i) => i.rpzFile),
          addresses: instances.map((i) => `${HOST}:${i.instancePort}`),
          controlDirs: instances.map((i) => join(i.workDir, 'control')),
        },
      },
      null,
      2,
    )}\n`,
  )
  const dnsctlEnv = { PATH: process.env.PATH ?? '', DNSCTL_CONFIG: dnsctlConfig }
  const dnsctl = spawn(ctx.node, [join(import.meta.dirname, 'src', 'main.ts')], {
    env: dnsctlEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  dnsctl.stdout.pipe(dnsctlLog)
  dnsctl.stderr.pipe(dnsctlLog)
  const server = supervise(dnsctl, { what: 'dnsctl', log: ctx.log, logFile: dnsctlLogFile })
  const all = [server, ...kresds, knot]
  const stop = async () => {
    await server.stop()
    await Promise.all(kresds.map((k) => k.stop()))
    await knot.stop()
  }
  try {
    await waitHttp({ app: 'dnsctl', url: `${API}/readyz`, timeoutMs: 20_000, child: dnsctl, logFile: dnsctlLogFile })
    const zones = (await (await fetch(`${API}/v1/zones`)).json()) as { zones: { name: string }[] }
    if (!zones.zones.some((z) => z.name === 'example.test')) {
      const res = await fetch(`${API}/v1/zones/example.test`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'primary', zone_text: EXAMPLE }),
      })
      if (!res.ok) ctx.log(`creating example.test failed: ${await res.text()}`)
    }
    await denyDemoName(ctx, API, dnsctlEnv)
  } catch (err) {
    await stop()
    throw err
  }
  for (const c of all) c.ready()
  return {
    urls: {
      api: API,
      openapi: `${API}/openapi.json`,
      console: `http://${HOST}:${consolePort}/console/`,
      dns: `udp://127.0.0.1:${port}`,
      resolver: `udp://127.0.0.1:${resolverPort}`,
    },
    notes: [
      `knotd serves example.test on 127.0.0.1:${port}; logs in ${shownPath(ctx.root, ctx.dataDir)}`,
      'try it (the API is described at /docs):',
      `$ curl -s ${API}/v1/zones/example.test/rrsets`,
      `$ kdig @127.0.0.1 -p ${port} www.example.test A`,
      `two kresd processes share 127.0.0.1:${resolverPort}, resolve through knotd and enforce the blocklist (blocked.example is denied: NXDOMAIN):`,
      `$ kdig @127.0.0.1 -p ${resolverPort} blocked.example A`,
      `$ kdig @127.0.0.1 -p ${resolverPort} www.example.test A`,
      'the web console (zones, RRsets, history, blocklists, metrics, queries) signs in with a one-time link:',
      `$ bin/dnsctl console --url ${API}`,
    ],
    stop,
  }
}
