/**
 * Wiring of the refresh job to the configuration, and its daily schedule: the first run comes
 * a random part of the jitter after start (so a fleet restarted together does not hit the list
 * servers at once), then every interval plus a fresh random jitter. The schedule skips a run
 * while the CLI's run holds the lock.
 */
import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import { createTlsAgent, type Logger } from '@gatehouse/kit'
import type { Config } from '../config.ts'
import { RefreshBusyError, type RefreshOptions, type RefreshReport, refreshBlocklists } from './refresh.ts'

export function refreshOptions(config: Config, now?: () => Date): RefreshOptions {
  const extra = config.blocklist.caFile ? readFileSync(config.blocklist.caFile, 'utf8') : undefined
  const dispatcher = createTlsAgent({
    ...(extra ? { ca: Buffer.from([...rootCertificates, extra].join('\n')) } : {}),
    requestTimeoutMs: config.blocklist.fetchTimeout,
  })
  return {
    blocklistDir: config.blocklistDir,
    resultsDir: config.resultsDir,
    instances: config.resolver.rpzFiles.map((rpzFile, i) => ({ rpzFile, address: config.resolver.addresses[i]! })),
    limits: { maxBytes: config.blocklist.maxSourceBytes, timeoutMs: config.blocklist.fetchTimeout, dispatcher },
    loadTimeoutMs: config.resolver.loadTimeout,
    ...(now ? { now } : {}),
  }
}

export interface Schedule {
  stop(): Promise<void>
}

export function scheduleRefresh(
  config: Config,
  log: Logger,
  onReport: (r: RefreshReport) => void = () => {},
): Schedule {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let stopped = false
  const arm = (delayMs: number) => {
    if (stopped) return
    timer = setTimeout(() => {
      running = refreshBlocklists(refreshOptions(config))
        .then((report) => {
          onReport(report)
          if (report.ok) log.info({ domains: report.domain_count }, 'blocklist refresh succeeded')
          else log.warn({ error: report.error, domains: report.domain_count }, 'blocklist refresh failed')
        })
        .catch((err) => {
          if (err instanceof RefreshBusyError) log.info(err.message)
          else log.error({ err }, 'blocklist refresh failed')
        })
        .finally(() => {
          running = undefined
          arm(config.blocklist.refreshInterval + Math.random() * config.blocklist.refreshJitter)
        })
    }, delayMs)
    timer.unref()
  }
  arm(Math.random() * config.blocklist.refreshJitter)
  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      await running
    },
  }
}
