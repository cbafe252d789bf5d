/** `dnsctl serve` (also bare `dnsctl`): config -> database -> recovery -> listen; SIGTERM drains publications. */
import { mkdirSync } from 'node:fs'
import { openDatabase } from '@gatehouse/kit/db/database.ts'
import { StartupError } from '@gatehouse/kit/errors.ts'
import { createLogger } from '@gatehouse/kit/logger.ts'
import { mkdirPrivateSync } from '@gatehouse/kit/private-files.ts'
import { runMain } from '@gatehouse/kit/process.ts'
import { loadDnsctlConfig } from '../config.ts'
import { migrations } from '../db/migrations/index.ts'
import type { DB } from '../db/schema.ts'
import { lockStateDir } from '../files/state-lock.ts'
import { buildServer } from '../server.ts'

export async function serve(flags: Record<string, unknown>, configFile: string | undefined): Promise<void> {
  await runMain({ name: 'dnsctl' }, async () => {
    const config = loadDnsctlConfig([], process.env, { flags, config: configFile })
    const logger = createLogger({ name: 'dnsctl', level: config.logLevel })
    for (const warning of config.warnings) logger.warn(warning)
    // The journal (zone text) and job results are owner-only (0700 when created), like the
    // database (0600, kit). The state and blocklist folders keep the umask: the resolver,
    // which may run as another user, reads the published blocklist files under them.
    const shared = new Set([config.stateDir, config.blocklistDir])
    for (const dir of [config.stateDir, config.journalDir, config.blocklistDir, config.resultsDir]) {
      try {
        if (shared.has(dir)) mkdirSync(dir, { recursive: true })
        else mkdirPrivateSync(dir)
      } catch (err) {
        throw new StartupError(`cannot create ${dir}: ${(err as Error).message}`)
      }
    }
    const unlock = lockStateDir(config.stateDir)
    const database = await openDatabase<DB>({ url: config.database, migrations, create: true }).catch((err) => {
      unlock()
      throw err
    })
    const server = await buildServer(config, { db: database.db, logger })
    try {
      await server.start()
    } catch (err) {
      await database.close()
      unlock()
      if (err instanceof StartupError) throw err
      throw new StartupError(`knotd at ${config.knot.socket} is not usable: ${(err as Error).message}`, { cause: err })
    }
    let address: string
    try {
      address = await server.app.listen({ host: config.listen.host, port: config.listen.port })
    } catch (err) {
      await server.close()
      await database.close()
      unlock()
      throw new StartupError(`cannot listen on ${config.listen.host}:${config.listen.port}: ${(err as Error).message}`)
    }
    let metricsAddress: string | undefined
    if (server.metricsApp && config.metricsListen) {
      try {
        metricsAddress = await server.metricsApp.listen({
          host: config.metricsListen.host,
          port: config.metricsListen.port,
        })
      } catch (err) {
        await server.close()
        await database.close()
        unlock()
        throw new StartupError(
          `cannot listen on ${config.metricsListen.host}:${config.metricsListen.port} (metrics): ${(err as Error).message}`,
        )
      }
    }
    logger.info(
      { address, metrics: metricsAddress, ha_role: server.ha.role, zones: server.zones.list().length },
      'dnsctl listening',
    )
    const consoleAt = config.console.listen
    if (consoleAt) {
      try {
        const url = await server.console.listener.listen(consoleAt.host, consoleAt.port)
        logger.info({ address: url }, 'web console listening; sign in with: dnsctl console')
      } catch (err) {
        await server.close()
        await database.close()
        unlock()
        throw new StartupError(
          `cannot listen on ${consoleAt.host}:${consoleAt.port} (console): ${(err as Error).message}`,
        )
      }
    }
    return async () => {
      await server.close()
      await database.close()
      unlock()
    }
  })
}
