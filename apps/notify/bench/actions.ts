/**
 * `node bench/actions.ts` (from apps/notify): the cost of a card action invocation on SQLite.
 *   - invoke: POST /api/v1/notifications/{id}/actions/0 with a new Idempotency-Key each time
 *     (claim row, target and credential lookup, decryption, the SSRF-checked pinned call to a
 *     loopback target, the final row), one at a time, N times;
 *   - replay: the same request with an already used key (answered from the database);
 *   - baseline: the same callback POSTed straight from this process on a new connection each
 *     time, as the dispatcher does (no keep-alive to targets).
 * Prints p50/p99 per request and the ratios to the baseline. NOTIFY_BENCH_CALLS (default 500).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { tempDir } from '@gatehouse/testkit'
import { startNotifyProcess } from './servers.ts'

const CALLS = Number(process.env.NOTIFY_BENCH_CALLS ?? 500)
const PASSWORD = 'bench-password-123'

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 })

function request(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string,
  agent: http.Agent | false,
) {
  return new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    const req = http.request(url, { method, agent, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => {
        text += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

async function timed(
  n: number,
  fn: (i: number) => Promise<void>,
): Promise<{ p50: number; p99: number; perSecond: number }> {
  const times: number[] = []
  const start = performance.now()
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn(i)
    times.push(performance.now() - t0)
  }
  const total = (performance.now() - start) / 1000
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99), perSecond: n / total }
}

const target = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'))
})
await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`

const dir = tempDir('notify-bench-actions-')
const env = {
  NOTIFY_DATABASE_URL: `sqlite:${join(dir.path, 'bench.db')}`,
  NOTIFY_READER_USERNAME: 'admin',
  NOTIFY_READER_PASSWORD: PASSWORD,
  NOTIFY_BCRYPT_COST: '4',
  NOTIFY_ACTION_KEY: Buffer.alloc(32, 1).toString('base64'),
  NOTIFY_LOG_LEVEL: 'warn',
}
// The browser rules want Host and Origin to match the public URL; the port is chosen by
// startNotifyProcess, so the public URL is a name this client sends as Host.
const PUBLIC = 'http://notify.bench'
const notify = await startNotifyProcess({ ...env, NOTIFY_PUBLIC_URL: PUBLIC })
const base = notify.base
const browser = { host: 'notify.bench', origin: PUBLIC }
try {
  const json = { 'content-type': 'application/json', ...browser }
  const login = await request(
    `${base}/api/v1/auth/login`,
    'POST',
    json,
    JSON.stringify({ username: 'admin', password: PASSWORD }),
    keepAlive,
  )
  const cookie = String(login.headers['set-cookie']).split(';')[0]!
  const auth = { ...json, cookie }
  const ch = JSON.parse((await request(`${base}/api/v1/channels`, 'POST', auth, '{"name":"bench"}', keepAlive)).body)
  await request(
    `${base}/api/v1/action-targets/bench`,
    'PUT',
    auth,
    JSON.stringify({ url: targetUrl, allow_private: true, credential: 'bench-credential' }),
    keepAlive,
  )
  const card = JSON.stringify({
    version: 1,
    title: 'bench',
    actions: [{ type: 'registered', label: 'Run', target: 'bench' }],
  })
  const created = await request(
    `${base}/api/v1/notifications`,
    'POST',
    { 'content-type': 'application/json', authorization: `Bearer ${ch.publishing.token}` },
    card,
    keepAlive,
  )
  const id = JSON.parse(created.body).notification.id
  const invokeUrl = `${base}/api/v1/notifications/${id}/actions/0`
  const invoke = async (key: string) => {
    const r = await request(invokeUrl, 'POST', { ...browser, cookie, 'idempotency-key': key }, '', keepAlive)
    if (r.status !== 200 || !r.body.includes('"success"')) throw new Error(`invoke: ${r.status} ${r.body}`)
  }
  const body = JSON.stringify({ idempotency_key: 'k', notification: { id, channel: 'bench', title: 'bench' } })
  const direct = async () => {
    const r = await request(
      targetUrl,
      'POST',
      { 'content-type': 'application/json', authorization: 'Bearer bench-credential', 'idempotency-key': 'k' },
      body,
      false,
    )
    if (r.status !== 200) throw new Error(`direct: ${r.status}`)
  }
  // Warm both paths, then measure.
  for (let i = 0; i < 20; i++) {
    await invoke(`warm-${i}`)
    await direct()
  }
  const baseline = await timed(CALLS, () => direct())
  const invoked = await timed(CALLS, (i) => invoke(`call-${i}`))
  const replayed = await timed(CALLS, () => invoke('call-0'))
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  const row = (name: string, r: typeof baseline) =>
    `${name.padEnd(34)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ${r.perSecond.toFixed(0)}/s  ratio p50 ${(r.p50 / baseline.p50).toFixed(1)}x`
  console.log(`notify action invocation, SQLite, ${CALLS} sequential calls, ${cpu} (${os.cpus().length} cores)`)
  console.log(row('baseline: direct POST, new conn', baseline))
  console.log(row('invoke through notify (new key)', invoked))
  console.log(row('replay (key already used)', replayed))
} finally {
  await notify.stop()
  target.close()
  dir.remove()
}
