/**
 * `npm start`: a private knotd (its own config, control socket and zone folder under
 * ctx.dataDir, DNS on a free loopback port) and dnsctl on 127.0.0.1:8053 managing the
 * example zone `example.test`.
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
  shownPath,
  waitHttp,
} from '../../packages/kit/src/stack-ready.ts'

const HOST = '127.0.0.1'
const API_PORT = 8053
// Fixed (not a free port picked per start) so `kdig -p 8054` keeps working across restarts.
const DNS_PORT = 8054
const EXAMPLE = `$ORIGIN example.test.
$TTL 3600
@ IN SOA ns1 hostmaster 1 3600 900 604800 300
@ IN NS ns1
ns1 IN A 127.0.0.1
www 300 IN A 192.0.2.10
`

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

async function until(what: string, check: () => Promise<boolean>, child: ChildProcess, logFile: string) {
  const deadline = Date.now() + 20_000
  while (!(await check().catch(() => false))) {
    if (child.exitCode !== null) throw new StackError(`dnsctl: ${what} exited during startup; see ${logFile}`)
    if (Date.now() > deadline) throw new StackError(`dnsctl: ${what} did not start within 20 s; see ${logFile}`)
    await delay(100)
  }
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
  await until('knotd', async () => existsSync(socket), knotd, knotLogFile)

  const dnsctlLogFile = join(ctx.dataDir, 'dnsctl.log')
  const dnsctlLog = createWriteStream(dnsctlLogFile, { flags: 'a' })
  // The server reads this file (DNSCTL_CONFIG) and so does bin/dnsctl by default.
  const dnsctlConfig = join(ctx.dataDir, 'config.json')
  writeFileSync(
    dnsctlConfig,
    `${JSON.stringify(
      {
        listen: `${HOST}:${apiPort}`,
        stateDir: join(ctx.dataDir, 'state'),
        knot: { socket, zonesDir, address: `${HOST}:${port}` },
      },
      null,
      2,
    )}\n`,
  )
  const dnsctl = spawn(ctx.node, [join(import.meta.dirname, 'src', 'main.ts')], {
    env: { PATH: process.env.PATH ?? '', DNSCTL_CONFIG: dnsctlConfig },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  dnsctl.stdout.pipe(dnsctlLog)
  dnsctl.stderr.pipe(dnsctlLog)
  const stop = async () => {
    await stopChild(dnsctl)
    await stopChild(knotd)
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
  } catch (err) {
    await stop()
    throw err
  }
  return {
    urls: { api: API, openapi: `${API}/openapi.json`, dns: `udp://127.0.0.1:${port}` },
    notes: [
      `knotd serves example.test on 127.0.0.1:${port}; logs in ${shownPath(ctx.root, ctx.dataDir)}`,
      'try it (the API is described at /docs):',
      `$ curl -s ${API}/v1/zones/example.test/rrsets`,
      `$ kdig @127.0.0.1 -p ${port} www.example.test A`,
    ],
    stop,
  }
}
