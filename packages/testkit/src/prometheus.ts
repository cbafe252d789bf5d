/**
 * A real Prometheus (Debian's /usr/bin/prometheus) on a free loopback port with a temporary
 * data folder, scraping the given targets every second (by default), for tests of code that
 * reads Prometheus's HTTP API.
 */

import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { type Child, startChild } from './child.ts'
import { freePort, requireBinary, tempDir } from './env.ts'

export interface PrometheusOptions {
  /** `host:port` of each target scraped at /metrics. */
  targets: string[]
  /** Job label of the targets (default `test`). */
  job?: string
  /** Scrape interval in seconds (default 1). */
  scrapeIntervalSeconds?: number
}

export interface PrometheusSample {
  metric: Record<string, string>
  value: [number, string]
}

export interface Prometheus {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  url: string
  port: number
  dir: string
  /** An instant query (now); rejects on a query error. */
  query(promql: string): Promise<PrometheusSample[]>
  /**
   * Wait until every target has been scraped successfully by a scrape that started after
   * `afterMs` (Unix ms; default now): what a target exposed at that time is then stored.
   */
  waitForScrape(afterMs?: number, timeoutMs?: number): Promise<void>
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** @example const prom = await startPrometheus({ targets: [`127.0.0.1:${port}`] }); after(() => prom.stop()) */
export async function startPrometheus(options: PrometheusOptions): Promise<Prometheus> {
  const bin = requireBinary('/usr/bin/prometheus', 'prometheus')
  const dir = tempDir('gatehouse-prometheus-')
  const port = await freePort()
  const job = options.job ?? 'test'
  const interval = options.scrapeIntervalSeconds ?? 1
  const configFile = join(dir.path, 'prometheus.yml')
  writeFileSync(
    configFile,
    `global:
  scrape_interval: ${interval}s
  scrape_timeout: ${interval}s
  evaluation_interval: ${interval}s
scrape_configs:
  - job_name: ${JSON.stringify(job)}
    static_configs:
      - targets: ${JSON.stringify(options.targets)}
`,
  )
  const url = `http://127.0.0.1:${port}`
  let child: Child
  try {
    child = await startChild({
      name: 'prometheus',
      command: bin,
      args: [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dir.path, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      logFile: join(dir.path, 'prometheus.log'),
      timeoutMs: 30_000,
      probe: async () => (await fetch(`${url}/-/ready`)).status === 200,
    })
  } catch (err) {
    dir.remove()
    throw err
  }
  const query = async (promql: string): Promise<PrometheusSample[]> => {
    const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: promql })}`)
    const body = (await res.json()) as { status: string; error?: string; data?: { result: PrometheusSample[] } }
    if (body.status !== 'success') throw new Error(`prometheus query ${promql} failed: ${body.error}`)
    return body.data?.result ?? []
  }
  const stop = async () => {
    await child.stop()
    dir.remove()
  }
  return {
    url,
    port,
    dir: dir.path,
    query,
    async waitForScrape(afterMs = Date.now(), timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs
      const selector = `up{job=${JSON.stringify(job)}}`
      while (true) {
        const [up, at] = await Promise.all([query(selector), query(`timestamp(${selector})`)])
        const fresh =
          up.length === options.targets.length &&
          up.every((s) => s.value[1] === '1') &&
          at.every((s) => Number(s.value[1]) * 1000 > afterMs)
        if (fresh) return
        if (Date.now() > deadline) {
          throw new Error(
            `prometheus did not scrape ${options.targets.join(', ')} successfully within ${timeoutMs} ms (up: ${JSON.stringify(up)}); log: ${child.log()}`,
          )
        }
        await delay(200)
      }
    },
    stop,
    [Symbol.asyncDispose]: stop,
  }
}
