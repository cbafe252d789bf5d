/**
 * `npm start`: the web signal agent on local defaults. It starts its own Redis (127.0.0.1:6390,
 * AOF under the stack's data folder), registers itself once as node `websignal-1` (kind
 * websignal) on the local edgegate when the stack started it, and runs `websignal serve` with
 * /healthz, /readyz and /metrics on 127.0.0.1:9466 (a taken port stops the stack with one line
 * naming it). What it tails:
 * - with the stack's TLS gate (tlsgate's stack ran first): the access log of the demo nginx
 *   behind the gate, and demo traffic goes through the gate (stack-traffic.ts): visitors and a
 *   scanner from loopback addresses of their own. The gate's sightings and this agent's signals
 *   then name the same addresses and host, so the scanner becomes a web candidate on edgegate.
 * - without it: a sample access log this stack writes (visitors plus a scanner from a
 *   documentation address every few seconds), whose addresses no gate has seen.
 * Signals appear in edgegate under /api/signals; hourly analytics go to analytics.jsonl. Secrets
 * are files (0600) passed through `*_FILE` variables.
 */
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { StackContext, StackService, StartStack } from '@gatehouse/kit'
import { ensurePortFree, shownPath, supervise, waitHttp } from '../../packages/kit/src/stack-ready.ts'
import { type DemoTraffic, SCANNERS, startDemoTraffic, VISITORS } from './stack-traffic.ts'

const HOST = '127.0.0.1'
const REDIS_PORT = 6390
const LISTEN_PORT = 9466
const NODE_ID = 'websignal-1'
/** The demo site's name behind the TLS gate: its certificate's and the clients' SNI. */
const GATE_SITE_HOST = 'localhost'

function secretFile(path: string, make: () => string): string {
  if (!existsSync(path)) writeFileSync(path, `${make()}\n`, { mode: 0o600 })
  return path
}

/** Register `websignal-1` on the stack's edgegate once; the token is kept in a 0600 file. */
function controlPlane(ctx: StackContext): Record<string, unknown> | undefined {
  const edgegate = ctx.started.edgegate
  if (!edgegate?.urls.api) return undefined
  const dir = join(dirname(ctx.dataDir), 'edgegate')
  const ca = join(dir, 'tls', 'ca.crt')
  const tokenFile = join(ctx.dataDir, 'node-token')
  if (!existsSync(tokenFile)) {
    const r = spawnSync(
      ctx.node,
      [join(ctx.root, 'apps', 'edgegate', 'src', 'main.ts'), 'node', 'add', '--kind', 'websignal', NODE_ID],
      { env: { ...process.env, EDGEGATE_CONFIG: join(dir, 'config.json') }, encoding: 'utf8' },
    )
    const token = /token: (\S+)/.exec(r.stdout)?.[1]
    if (r.status !== 0 || !token) {
      ctx.log(`could not register ${NODE_ID} on edgegate (${r.stderr.trim()}): publishing disabled`)
      return undefined
    }
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 })
  }
  return { url: edgegate.urls.api.replace(/\/+$/, ''), instance_id: NODE_ID, ca, token_file: tokenFile }
}

/** The stack's TLS gate and the demo site behind it, when tlsgate's stack started them. */
interface GateSite {
  host: string
  port: number
  /** The demo nginx's access log: client addresses as the gate passed them on (PROXY protocol). */
  accessLog: string
  /** The demo site's self-signed certificate. */
  cert: string
}

/**
 * The TLS gate's demo site (apps/tlsgate/stack.ts keeps nginx, its log and its certificate
 * under its data folder, `nginx/`), or undefined when the stack does not run the gate.
 */
function gateSite(ctx: StackContext): GateSite | undefined {
  const url = ctx.started.tlsgate?.urls['tls gate']
  if (!url) return undefined
  const nginx = join(dirname(ctx.dataDir), 'tlsgate', 'nginx')
  const site = {
    host: HOST,
    port: Number(new URL(url).port),
    accessLog: join(nginx, 'logs', 'access.log'),
    cert: join(nginx, 'localhost.crt'),
  }
  if (!existsSync(site.accessLog) || !existsSync(site.cert)) {
    ctx.log(`the TLS gate runs but ${site.accessLog} or ${site.cert} is missing: tailing a sample log instead`)
    return undefined
  }
  return site
}

/**
 * How to see the scanner as a web candidate on the stack's edgegate and block it at the gate:
 * the administrator token and the TLS gate's node id are in edgegate's credentials.json.
 */
function webCandidateNotes(ctx: StackContext, url: string): string[] {
  const dir = join(dirname(ctx.dataDir), 'edgegate')
  const file = join(dir, 'credentials.json')
  const c = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as { adminToken?: string; tlsgateId?: string })
    : {}
  if (!c.adminToken || !c.tlsgateId) return []
  const ca = shownPath(ctx.root, join(dir, 'tls', 'ca.crt'))
  return [
    `the scanner through the TLS gate is a web candidate on edgegate (this agent's signals joined with ${c.tlsgateId}'s sightings; dashboard: Web candidates):`,
    `$ curl --cacert ${ca} -H "Authorization: Bearer ${c.adminToken}" ${url}/api/web-candidates`,
    "block the candidate's fingerprint for the gate: the gate refuses the scanner at its next pull (a line here says so) and lets the visitors through:",
    `$ bin/edgegate decision block --instance ${c.tlsgateId} <fingerprint>`,
  ]
}

const PAGES = ['/', '/about', '/blog/2026/11/hello', '/static/app.css', '/static/app.js', '/img/logo.png', '/contact']
const PROBES = ['/.env', '/.git/config', '/wp-login.php', '/phpmyadmin/', '/../../etc/passwd', '/admin.php']

function clf(ip: string, path: string, status: number, ua: string): string {
  const d = new Date()
  const mon = d.toUTCString().slice(8, 11)
  const p = (n: number) => String(n).padStart(2, '0')
  const t = `${p(d.getUTCDate())}/${mon}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
  return `${ip} - - [${t}] "GET ${path} HTTP/1.1" ${status} 512 "-" "${ua}"\n`
}

/** Append sample traffic: visitors every tick, a scanner burst every tenth tick. */
function sampleWriter(path: string): NodeJS.Timeout {
  let tick = 0
  return setInterval(() => {
    tick++
    let text = ''
    for (let i = 0; i < 5; i++) {
      text += clf(`192.0.2.${1 + ((tick + i) % 50)}`, PAGES[(tick + i) % PAGES.length]!, 200, 'Mozilla/5.0 (demo)')
    }
    if (tick % 10 === 0) {
      const scanner = `198.51.100.${1 + ((tick / 10) % 200)}`
      for (const probe of PROBES) text += clf(scanner, probe, 404, 'demo-scanner/1.0')
    }
    appendFileSync(path, text)
  }, 500)
}

export const startStack: StartStack = async (ctx: StackContext): Promise<StackService> => {
  const redisDir = join(ctx.dataDir, 'redis')
  mkdirSync(redisDir, { recursive: true })
  const redisPort = ctx.port(REDIS_PORT)
  await ensurePortFree('websignal', HOST, redisPort, 'Redis')
  const redisLog = join(ctx.dataDir, 'redis.log')
  const redis = spawn(
    '/usr/bin/redis-server',
    [
      '--port',
      String(redisPort),
      '--bind',
      HOST,
      '--dir',
      redisDir,
      '--appendonly',
      'yes',
      '--save',
      '',
      '--logfile',
      redisLog,
    ],
    { stdio: 'ignore' },
  )
  const store = supervise(redis, { what: 'redis-server', log: ctx.log, logFile: redisLog })
  const site = gateSite(ctx)
  const sampleLog = join(ctx.dataDir, 'access.log')
  const log = site?.accessLog ?? sampleLog
  if (!site && !existsSync(sampleLog)) writeFileSync(sampleLog, '')
  const writer = site ? undefined : sampleWriter(sampleLog)
  const listenPort = ctx.port(LISTEN_PORT)
  await ensurePortFree('websignal', HOST, listenPort, 'metrics')
  const cp = controlPlane(ctx)
  const configPath = join(ctx.dataDir, 'config.json')
  const config = {
    listen: `${HOST}:${listenPort}`,
    state_dir: join(ctx.dataDir, 'state'),
    agent_id: 'websignal-local',
    // Behind the gate, the host is the demo site's SNI: edgegate matches a signal with the
    // gate's sightings of the same host and address.
    inputs: [{ path: log, format: 'combined', site: 'demo', host: site ? GATE_SITE_HOST : 'www.example.test' }],
    store: { url: `redis://${HOST}:${redisPort}`, namespace: 'demo' },
    window: '5m',
    ...(cp ? { control_plane: cp } : {}),
    analytics: {
      output: 'file',
      file: join(ctx.dataDir, 'analytics.jsonl'),
      secret_file: secretFile(join(ctx.dataDir, 'analytics-secret'), () => randomBytes(32).toString('base64url')),
    },
  }
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`)
  // Redis must answer before the agent starts (an unreachable store stops startup).
  for (
    let i = 0;
    i < 100 &&
    spawnSync('redis-cli', ['-p', String(redisPort), 'ping'])
      .stdout?.toString()
      .trim() !== 'PONG';
    i++
  ) {
    await new Promise((r) => setTimeout(r, 100))
  }
  const out = join(ctx.dataDir, 'websignal.log')
  const child = spawn(ctx.node, [join(import.meta.dirname, 'src', 'main.ts'), 'serve', '--config', configPath], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '' },
  })
  child.stdout!.on('data', (c) => appendFileSync(out, c))
  child.stderr!.on('data', (c) => appendFileSync(out, c))
  const agent = supervise(child, { what: 'websignal', log: ctx.log, logFile: out })
  let traffic: DemoTraffic | undefined
  const stop = async () => {
    clearInterval(writer)
    await traffic?.stop()
    await agent.stop()
    await store.stop()
  }
  try {
    await waitHttp({
      app: 'websignal',
      url: `http://${HOST}:${listenPort}/readyz`,
      timeoutMs: 30_000,
      child,
      logFile: out,
    })
  } catch (err) {
    await stop()
    throw err
  }
  agent.ready()
  store.ready()
  if (site) {
    traffic = startDemoTraffic({
      host: site.host,
      port: site.port,
      servername: GATE_SITE_HOST,
      certFile: site.cert,
      log: ctx.log,
    })
    ctx.log(
      `tailing ${log} (the demo nginx behind the TLS gate ${site.host}:${site.port}; demo visitors from ${VISITORS[0]}-${VISITORS.at(-1)} every second, a scanner from ${SCANNERS.join(', ')} in turn every 5 s), Redis ${HOST}:${redisPort}`,
    )
  } else {
    ctx.log(`tailing ${log} (sample traffic written every 0.5 s), Redis ${HOST}:${redisPort}`)
  }
  return {
    urls: { metrics: `http://${HOST}:${listenPort}/metrics`, readyz: `http://${HOST}:${listenPort}/readyz` },
    notes: [
      cp
        ? `publishes to edgegate as ${NODE_ID}: a scanner appears every 5 s; see the signals with GET /api/signals (administrator token)`
        : 'edgegate is not running: signals are detected and queued, not published',
      ...(cp && site ? webCandidateNotes(ctx, cp.url as string) : []),
      `config: ${configPath}; analytics (hourly): ${join(ctx.dataDir, 'analytics.jsonl')}`,
      'how the agent is doing (ready, lease, signals waiting, how far the log is read), and its config checked:',
      `$ bin/websignal status --config ${shownPath(ctx.root, configPath)}`,
      `$ bin/websignal doctor --config ${shownPath(ctx.root, configPath)}`,
      `detection over the ${site ? "demo nginx's" : 'sample'} log with the agent's window and thresholds (the signals it would send):`,
      `$ bin/websignal replay --log ${shownPath(ctx.root, log)} --config ${shownPath(ctx.root, configPath)}`,
    ],
    stop,
  }
}
