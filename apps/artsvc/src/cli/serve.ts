/** `artsvc serve` (also bare `artsvc`): the server, with its maintenance timer, until a signal. */
import { StartupError } from '@gatehouse/kit/errors.ts'
import { parseListenAddress } from '@gatehouse/kit/net.ts'
import { periodic } from '@gatehouse/kit/periodic.ts'
import { runMain } from '@gatehouse/kit/process.ts'
import { loadServerConfig } from '../config.ts'
import { buildServer } from '../server.ts'

export async function serve(flags: Record<string, unknown>, configFile: string | undefined): Promise<void> {
  await runMain({ name: 'artsvc' }, async () => {
    const config = loadServerConfig(flags, configFile)
    const svc = await buildServer(config)
    for (const warning of config.warnings) svc.ctx.logger.warn(warning)
    try {
      await svc.ctx.store.check()
    } catch (err) {
      await svc.close()
      throw new StartupError(`storage (${config.storageBackend}) is unusable: ${(err as Error).message}`, {
        cause: err,
      })
    }
    const { host, port } = parseListenAddress(config.listen)
    await svc.app.listen({ host, port })
    svc.ctx.logger.info(
      { listen: config.listen, public: config.publicOrigin, content: config.contentOrigin },
      'artsvc listening',
    )
    // Stopped before the close, after the run in progress: the database stays open under it.
    const maintenance = periodic(() => svc.maintenance(), {
      intervalMs: config.maintenanceInterval,
      metrics: { app: svc.app.metrics, job: 'maintenance' },
      onError: (err) => svc.ctx.logger.error({ err }, 'maintenance failed'),
    })
    return async () => {
      await maintenance.stop()
      await svc.close()
    }
  })
}
