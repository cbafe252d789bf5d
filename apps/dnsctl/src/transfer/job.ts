/** Wiring of the zone-transfer job to the configuration. */
import type { Logger } from '@gatehouse/kit'
import type { Config } from '../config.ts'
import { Knotc } from '../knot/knotc.ts'
import { refreshTransfers, type TransferOptions } from './refresh.ts'

export function transferOptions(config: Config): TransferOptions | undefined {
  if (config.transfer.zones.length === 0 || !config.transfer.primary) return undefined
  return {
    zones: config.transfer.zones,
    primary: config.transfer.primary,
    local: config.knot.address,
    knotc: new Knotc({
      knotc: config.knot.knotc,
      socket: config.knot.socket,
      zonesDir: config.knot.zonesDir,
      timeoutMs: config.knot.commandTimeout,
    }),
    resultsDir: config.resultsDir,
    timeoutMs: config.transfer.timeout,
  }
}

/**
 * Run the job every interval (the first run one minute after start, so a restart does not wait
 * an hour for fresh health); stop() waits for a run in progress.
 */
export function scheduleTransfers(config: Config, log: Logger): { stop(): Promise<void> } {
  const options = transferOptions(config)
  if (!options) return { stop: async () => {} }
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let stopped = false
  const arm = (ms: number) => {
    if (stopped) return
    timer = setTimeout(() => {
      running = refreshTransfers(options)
        .then((r) => {
          if (r.ok) log.info({ mismatches: r.differential?.mismatches }, 'zone-transfer refresh done')
          else log.warn({ error: r.error }, 'zone-transfer refresh failed')
        })
        .catch((err) => log.error({ err }, 'zone-transfer refresh failed'))
        .finally(() => {
          running = undefined
          arm(config.transfer.interval)
        })
    }, ms)
    timer.unref()
  }
  arm(Math.min(60_000, config.transfer.interval))
  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      await running
    },
  }
}
