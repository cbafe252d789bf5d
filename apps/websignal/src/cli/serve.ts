/**
 * `websignal serve --config FILE`: strict config, secrets from `*_FILE`, the store must
 * answer at startup (exit 1 otherwise), then run until SIGTERM/SIGINT.
 */
import { createLogger, runMain, StartupError } from '@gatehouse/kit'
import { Agent } from '../agent.ts'
import { configPath, loadWebsignalConfig, storeAddress } from '../config.ts'
import { PatternError } from '../detect/patterns.ts'
import { buildListener } from '../http/listener.ts'
import { agentMetrics } from '../metrics.ts'
import { SchemaMismatchError, Store } from '../store/store.ts'

export async function serveCommand(opts: { config?: string }): Promise<void> {
  await runMain({ name: 'websignal' }, async () => {
    const config = loadWebsignalConfig(configPath(opts.config))
    const logger = createLogger({ name: 'websignal', level: config.logLevel })
    for (const warning of config.warnings) logger.warn(warning)
    const metrics = agentMetrics()
    const store = new Store(config.store)
    try {
      await store.open()
    } catch (err) {
      await store.close()
      if (err instanceof SchemaMismatchError) throw new StartupError(err.message)
      const cause = store.lastError?.message ?? (err as Error).message
      throw new StartupError(`the store ${storeAddress(config.store)} is unreachable: ${cause}`)
    }
    let agent: Agent
    try {
      agent = new Agent({ config, store, metrics, logger })
    } catch (err) {
      await store.close()
      if (err instanceof PatternError || err instanceof TypeError) throw new StartupError(err.message)
      throw err
    }
    const app = await buildListener(logger, metrics, () => agent.readiness())
    await app.listen({ host: config.listen.host, port: config.listen.port })
    await agent.start()
    logger.info(
      {
        listen: `${config.listen.host}:${(app.server.address() as { port: number }).port}`,
        inputs: config.inputs.length,
        shadow: config.shadow,
        publishing: config.controlPlane !== undefined && !config.shadow,
      },
      'websignal started',
    )
    // SIGHUP (a renewal's deploy hook, `systemctl reload`, a rotated token put in place): the
    // control-plane client takes the token, certificate, key and CA its files hold now; a bad
    // set keeps the previous ones. The agent logs the outcome.
    const reload = async () => {
      agent.reloadCredentials()
    }
    const stop = async () => {
      await agent.stop()
      await app.close()
      await store.close()
    }
    return { stop, reload }
  })
}
