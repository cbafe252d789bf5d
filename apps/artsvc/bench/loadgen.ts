/** A small closed-loop HTTP load generator (undici pool, keep-alive): requests/s over a fixed time. */
import { Pool } from 'undici'

export interface LoadResult {
  requests: number
  errors: number
  seconds: number
  rps: number
}

export async function load(
  origin: string,
  paths: string[],
  options: { connections: number; seconds: number; headers?: Record<string, string> },
): Promise<LoadResult> {
  const pool = new Pool(origin, { connections: options.connections, pipelining: 1 })
  let requests = 0
  let errors = 0
  let i = 0
  const started = performance.now()
  const deadline = started + options.seconds * 1000
  const worker = async () => {
    while (performance.now() < deadline) {
      const path = paths[i++ % paths.length]!
      try {
        const res = await pool.request({ path, method: 'GET', headers: options.headers })
        await res.body.arrayBuffer()
        if (res.statusCode === 200) requests++
        else errors++
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: options.connections }, worker))
  const seconds = (performance.now() - started) / 1000
  await pool.close()
  return { requests, errors, seconds, rps: requests / seconds }
}
