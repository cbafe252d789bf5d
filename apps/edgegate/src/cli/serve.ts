/** `edgegate serve`: the control plane over HTTPS, with retention and trusted-range discovery. */
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { StartupError } from '@gatehouse/kit/errors.ts'
import { createLogger } from '@gatehouse/kit/logger.ts'
import { parseListenAddress } from '@gatehouse/kit/net.ts'
import { runMain } from '@gatehouse/kit/process.ts'
import { createTlsAgent, loadTlsMaterial } from '@gatehouse/kit/tls.ts'
import { serveSchema } from '../config.ts'
import { openEdgeDatabase } from '../db/open.ts'
import { startRetention } from '../observations/retention.ts'
import { buildServer } from '../server.ts'
import { TrustedRanges } from '../trusted/ranges.ts'

export async function serve(flags: Record<string, unknown>, configFile: string | undefined): Promise<void> {
  await runMain({ name: 'edgegate' }, async () => {
    const { config } = loadAppConfig('edgegate', serveSchema, { flags, config: configFile })
    const logger = createLogger({ name: 'edgegate', level: config.log_level })
    const rangeFiles = config.trusted_ranges_file ?? []
    const rangeUrls = config.trusted_ranges_url ?? []
    const discovery = rangeFiles.length > 0 || rangeUrls.length > 0
    const trusted = discovery
      ? new TrustedRanges({
          files: rangeFiles,
          urls: rangeUrls,
          refreshMs: config.trusted_ranges_refresh,
          log: logger,
          ...(config.trusted_ranges_ca
            ? { dispatcher: createTlsAgent(loadTlsMaterial({ ca: config.trusted_ranges_ca })) }
            : {}),
        })
      : undefined
    const database = await openEdgeDatabase(config.database)
    let stopRetention: (() => Promise<void>) | undefined
    try {
      await trusted?.start()
      const { app } = await buildServer(config, { database, logger, ...(trusted ? { trusted } : {}) })
      const { host, port } = parseListenAddress(config.listen)
      try {
        await app.listen({ host, port })
      } catch (err) {
        throw new StartupError(`cannot listen on ${config.listen}: ${(err as Error).message}`)
      }
      const address = app.server.address()
      const actual = typeof address === 'object' && address ? address.port : port
      logger.info(
        { listen: `${host}:${actual}`, database: database.kind },
        `edgegate listening on https://${host.includes(':') ? `[${host}]` : host}:${actual}`,
      )
      stopRetention = startRetention(
        database.db,
        database.kind,
        {
          sightingRetentionMs: config.sighting_retention,
          signalRetentionMs: config.signal_retention,
          intervalMs: config.retention_interval,
        },
        logger,
      )
      return async () => {
        await app.close()
        await stopRetention?.()
        trusted?.stop()
        await database.close()
      }
    } catch (err) {
      await stopRetention?.()
      trusted?.stop()
      await database.close()
      throw err
    }
  })
}
