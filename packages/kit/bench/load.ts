/**
 * HTTP load generator, run as a child process so it does not share the server's event
 * loop: `node bench/load.ts <url> <connections> <warmupMs> <durationMs>`. Keep-alive undici
 * pool, one request in flight per connection; prints one JSON line and exits.
 */
import { Pool } from 'undici'

const [url, connArg, warmArg, durArg] = process.argv.slice(2)
if (!url) throw new TypeError('usage: load.ts <url> <connections> <warmupMs> <durationMs>')
const connections = Number(connArg ?? 50)
const warmupMs = Number(warmArg ?? 1000)
const durationMs = Number(durArg ?? 4000)
const target = new URL(url)
const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 })

async function drive(untilMs: number, counters: { ok: number; errors: number }) {
  const worker = async () => {
    while (performance.now() < untilMs) {
      try {
        const res = await pool.request({ path: target.pathname, method: 'GET' })
        await res.body.text()
        if (res.statusCode === 200) counters.ok++
        else counters.errors++
      } catch {
        counters.errors++
      }
    }
  }
  await Promise.all(Array.from({ length: connections }, worker))
}

await drive(performance.now() + warmupMs, { ok: 0, errors: 0 })
const counters = { ok: 0, errors: 0 }
const t0 = performance.now()
await drive(t0 + durationMs, counters)
const seconds = (performance.now() - t0) / 1000
await pool.close()
process.stdout.write(`${JSON.stringify({ requests: counters.ok, errors: counters.errors, seconds })}\n`)
