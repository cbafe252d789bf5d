/** `notify serve` (also bare `notify`): open the database (migrations run), listen, drain on SIGTERM/SIGINT. */
import { createLogger } from '@gatehouse/kit/logger.ts'
import { parseListenAddress } from '@gatehouse/kit/net.ts'
import { runMain } from '@gatehouse/kit/process.ts'
import { loadServiceConfig } from '../config.ts'
import { openNotifyDatabase } from '../db/open.ts'
import { buildServer } from '../server.ts'

export async function serve(flags: Record<string, unknown>, configFile: string | undefined): Promise<void> {
  await runMain({ name: 'notify' }, async () => {
    const { config, warnings } = loadServiceConfig({ flags, config: configFile })
    const logger = createLogger({ name: 'notify', level: config.logLevel })
    for (const warning of warnings) logger.warn(warning)
    const database = await openNotifyDatabase(config.database, undefined, {
      backgroundCheckpoints: true,
      onWarning: (message) => logger.warn(message),
    })
    let app: Awaited<ReturnType<typeof buildServer>>
    try {
      app = await buildServer(config, { database, logger })
      const { host, port } = parseListenAddress(config.listen)
      await app.listen({ host, port })
    } catch (err) {
      await database.close()
      throw err
    }
    if (!config.auth) {
      logger.warn(
        { listen: config.listen },
        'reader authentication is off (no NOTIFY_READER_PASSWORD): unauthenticated development mode, loopback only',
      )
    }
    logger.info({ listen: config.listen, database: database.kind, auth: config.auth }, 'notify listening')
    return async () => {
      await app.close()
      await database.close()
    }
  })
}
