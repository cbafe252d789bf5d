/**
 * websignal benchmarks (`npm run bench -w apps/websignal`), ratios against baselines in the
 * same run:
 * 1. Lines/s end to end (tail -> parse -> aggregate in a real Redis -> detect) on a generated
 *    combined log, against `cat` of the same file and a bare parse-only loop; GoAccess as a
 *    peer when installed.
 * 2. Agent memory holding 1M distinct client IPs in one tick, and Redis memory per aggregate.
 * WEBSIGNAL_BENCH_LINES sets the file size (default 1,000,000: this machine is shared).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { createWriteStream, existsSync, statSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '@gatehouse/kit'
import { startRedis, tempDir } from '@gatehouse/testkit'
import { Agent } from '../src/agent.ts'
import { loadWebsignalConfig } from '../src/config.ts'
import { BUILTIN_PATTERN_DIR, compilePatterns, loadPatternLists } from '../src/detect/patterns.ts'
import { WindowAggregator } from '../src/detect/window.ts'
import { parseCombined } from '../src/logs/combined.ts'
import { agentMetrics } from '../src/metrics.ts'
import { Store } from '../src/store/store.ts'
import { Tailer } from '../src/tail/tailer.ts'

const LINES = Number(process.env.WEBSIGNAL_BENCH_LINES ?? 1_000_000)
const dir = tempDir('websignal-bench-')
const log = join(dir.path, 'access.log')

const PATHS = [
  '/',
  '/index.html',
  '/about',
  '/blog/2026/11/post',
  '/static/app.js',
  '/static/app.css',
  '/img/logo.png',
  '/api/items?id=42',
  '/login',
  '/.env',
  '/wp-login.php',
  '/search?q=x',
]
const UAS = [
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
  'curl/8.5.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)',
]

async function generate(): Promise<void> {
  const out = createWriteStream(log)
  const t0 = Date.UTC(2026, 10, 25, 8, 0, 0)
  let buf = ''
  for (let i = 0; i < LINES; i++) {
    // About 20,000 distinct clients, as on a busy site over ten minutes.
    const c = (i * 7919) % 20_000
    const ip = `10.${c >> 16}.${(c >> 8) & 255}.${c & 255}`
    const d = new Date(t0 + Math.floor((i / LINES) * 600_000))
    const ts = `25/Nov/2026:${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}:${String(d.getUTCSeconds()).padStart(2, '0')} +0000`
    const p = PATHS[i % PATHS.length]!
    const status = p === '/.env' || p === '/wp-login.php' ? 404 : 200
    buf += `${ip} - - [${ts}] "GET ${p} HTTP/1.1" ${status} ${512 + (i % 4000)} "https://www.example.org/" "${UAS[i % UAS.length]}"\n`
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()))
      buf = ''
    }
  }
  out.end(buf)
  await new Promise<void>((r) => out.on('finish', () => r()))
}

function seconds(f: () => void): number {
  const t = process.hrtime.bigint()
  f()
  return Number(process.hrtime.bigint() - t) / 1e9
}

async function parseOnly(): Promise<number> {
  const st = statSync(log)
  let n = 0
  const tailer = new Tailer(
    { path: log, start: { dev: st.dev, ino: st.ino, offset: 0 }, maxLineBytes: 16 * 1024 },
    {
      lines: (lines) => {
        for (const l of lines) if (parseCombined(l)) n++
      },
      tooLong: () => {},
      restart: () => {},
    },
  )
  const t = process.hrtime.bigint()
  await tailer.poll()
  await tailer.close()
  if (n !== LINES) throw new Error(`parse-only parsed ${n} of ${LINES}`)
  return Number(process.hrtime.bigint() - t) / 1e9
}

/**
 * The agent on a real Redis until every line is parsed and flushed: wall time, and the agent's
 * own CPU time (user + system of this process: Redis runs in its own process, as in production).
 */
async function endToEnd(
  redisUrl: string,
  flushInterval: string,
  analytics = false,
): Promise<{ s: number; cpu: number; keys: number; redisBytes: number }> {
  const name = `${flushInterval}${analytics ? '-analytics' : ''}`
  const state = join(dir.path, `state-${name}`)
  const st = statSync(log)
  const cfgPath = join(dir.path, 'websignal.json')
  writeFileSync(
    cfgPath,
    JSON.stringify({
      state_dir: state,
      inputs: [{ path: log, format: 'combined', site: 'main', host: 'www.example.org' }],
      store: { url: redisUrl, namespace: `bench-${name}` },
      ...(analytics
        ? {
            analytics: {
              output: 'file',
              file: join(dir.path, `analytics-${name}.jsonl`),
              secret: 'bench-analytics-secret-0123456789',
            },
          }
        : {}),
      window: '5m',
      flush_interval: flushInterval,
      poll_interval: '100ms',
      log_level: 'silent',
    }),
  )
  const { mkdirSync } = await import('node:fs')
  mkdirSync(state, { recursive: true })
  writeFileSync(join(state, 'offsets.json'), JSON.stringify({ [log]: { dev: st.dev, ino: st.ino, offset: 0 } }))
  const config = loadWebsignalConfig(cfgPath, {})
  const store = new Store(config.store)
  await store.open()
  const before = Number(/used_memory:(\d+)/.exec(await store.redis.info('memory'))![1])
  const metrics = agentMetrics()
  const agent = new Agent({ config, store, metrics, logger: createLogger({ name: 'websignal', level: 'silent' }) })
  const t = process.hrtime.bigint()
  const cpu0 = process.cpuUsage()
  await agent.start()
  for (;;) {
    const parsed = (await metrics.parsed.get()).values[0]?.value ?? 0
    if (parsed >= LINES) break
    await new Promise((r) => setTimeout(r, 20))
  }
  await agent.flush()
  const s = Number(process.hrtime.bigint() - t) / 1e9
  const used = process.cpuUsage(cpu0)
  await agent.stop()
  const keys = await store.redis.dbsize()
  const after = Number(/used_memory:(\d+)/.exec(await store.redis.info('memory'))![1])
  await store.close()
  return { s, cpu: (used.user + used.system) / 1e6, keys, redisBytes: after - before }
}

function memoryAt1M(): number {
  const agg = new WindowAggregator(300_000, compilePatterns(loadPatternLists([BUILTIN_PATTERN_DIR])))
  globalThis.gc?.()
  const before = process.memoryUsage().heapUsed
  const now = Date.UTC(2026, 10, 25, 8)
  for (let i = 0; i < 1_000_000; i++) {
    agg.add(
      {
        ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        host: undefined,
        target: '/index.html',
        status: 200,
        userAgent: '',
        timeMs: now,
      },
      'main',
      'www.example.org',
      now,
    )
  }
  globalThis.gc?.()
  const used = process.memoryUsage().heapUsed - before
  if (agg.size !== 1_000_000) throw new Error('expected 1M keys')
  return used
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

await generate()
const bytes = statSync(log).size
console.log(
  `websignal bench: ${fmt(LINES)} combined lines (${(bytes / 1e6).toFixed(0)} MB), node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
)
const cat = seconds(() => execFileSync('sh', ['-c', `cat "${log}" > /dev/null`]))
const parse = await parseOnly()
const redis = await startRedis()
// The default flush cadence (1 s), and a shortened one (250 ms: more store calls per line).
let e2e: Awaited<ReturnType<typeof endToEnd>>
let e2eFast: Awaited<ReturnType<typeof endToEnd>>
// The same with hourly analytics on (a visitor HMAC, bot test and path normalisation per line).
let e2eAnalytics: Awaited<ReturnType<typeof endToEnd>>
try {
  e2e = await endToEnd(redis.url, '1s')
  e2eFast = await endToEnd(redis.url, '250ms')
  e2eAnalytics = await endToEnd(redis.url, '1s', true)
} finally {
  await redis.stop()
}
// GoAccess as a peer (single-threaded: its wall rate is close to its CPU rate). `times` in
// the wrapping shell reports the child's CPU seconds, the same measure as the agent's.
let goaccess: { s: number; cpu: number } | undefined
if (existsSync('/usr/bin/goaccess')) {
  let out = ''
  const s = seconds(() => {
    const r = spawnSync(
      'bash',
      [
        '-c',
        'goaccess "$1" --log-format=COMBINED -o "$2" >/dev/null 2>&1 || exit 1; times',
        'bench',
        log,
        join(dir.path, 'report.json'),
      ],
      { encoding: 'utf8' },
    )
    if (r.status !== 0) throw new Error(`goaccess exited ${r.status}`)
    out = r.stdout
  })
  // `times` prints the shell's, then its children's, user and system time: `0m1.234s 0m0.056s`.
  const child = out
    .trim()
    .split('\n')
    .at(-1)!
    .match(/(\d+)m([\d.]+)s/g)!
  const cpu = child.map((t) => {
    const [, m, sec] = /(\d+)m([\d.]+)s/.exec(t)!
    return Number(m) * 60 + Number(sec)
  })
  goaccess = { s, cpu: cpu[0]! + cpu[1]! }
}
const rate = (s: number) => LINES / s
console.log(`cat                 ${fmt(rate(cat))} lines/s`)
console.log(`parse only          ${fmt(rate(parse))} lines/s`)
for (const [label, r] of [
  ['flush 1s (default)', e2e],
  ['flush 250ms', e2eFast],
  ['1s + analytics', e2eAnalytics],
] as const) {
  console.log(
    `end to end, ${label.padEnd(18)} ${fmt(rate(r.s))} lines/s wall = ${(rate(r.s) / rate(parse)).toFixed(2)}x parse-only; ${fmt(LINES / r.cpu)} lines per agent CPU-second`,
  )
}
if (goaccess !== undefined) {
  console.log(
    `goaccess 1.7        ${fmt(rate(goaccess.s))} lines/s wall, ${fmt(LINES / goaccess.cpu)} lines per CPU-second; end to end at the default cadence is ${(rate(e2e.s) / rate(goaccess.s)).toFixed(2)}x goaccess wall, ${(goaccess.cpu / e2e.cpu).toFixed(2)}x per CPU-second`,
  )
} else console.log('goaccess            not installed (apt-get install -y goaccess)')
console.log(
  `redis               ${fmt(e2e.keys)} keys, ~${fmt(e2e.redisBytes / Math.max(1, e2e.keys / 2))} bytes per aggregate (hash + HyperLogLog)`,
)
const mem = memoryAt1M()
console.log(
  `memory, 1M distinct IPs in one tick: ${(mem / 1048576).toFixed(0)} MiB heap (${fmt(mem / 1e6)} bytes per IP)`,
)
console.log(
  `load average at the end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
)
dir.remove()
