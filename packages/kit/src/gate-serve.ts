/**
 * `serve` of a gate (sshproxy, tlsgate) on `runMain`: read the config, open the store, build
 * and start the gate, start the control-plane sync when configured, log `<app> ready`; on
 * SIGTERM stop accepting and drain, then stop the sync, then close the store (the sync must not
 * touch the database after it is closed). A listen or certificate problem is one startup line.
 */
import { credentialReloader } from './control-plane-client.ts'
import { StartupError } from './errors.ts'
import type { SyncHandle } from './gate-sync.ts'
import { createLogger, type Logger, type StdoutDestination, stdoutDestination } from './logger.ts'
import { runMain } from './process.ts'

export interface GateServeConfig {
  dbPath: string
  drainTimeoutMs: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent'
  /** Logged once the logger exists (a secret in a file every user may read). */
  warnings?: string[]
  /** The control plane to sync with; SIGHUP takes a new bearer token from a config read again. */
  controlPlane?: { auth: { kind: string; token?: string } } | undefined
}

export interface ServedGate {
  start(): Promise<void>
  stop(drainMs: number): Promise<void>
}

export interface GateServeOptions<
  C extends GateServeConfig,
  S extends { close(): Promise<void> },
  G extends ServedGate,
  Y extends Pick<SyncHandle, 'reloadCredentials'>,
> {
  name: string
  readConfig(): C
  openStore(path: string): Promise<S>
  build(config: C, store: S, logger: Logger): Promise<G>
  /** Start the sync (undefined when no control plane is configured); may throw on unreadable files. */
  startSync(config: C, store: S, gate: G, logger: Logger): Y | undefined
  /** Fields of the `<name> ready` line. */
  ready(config: C, gate: G): Record<string, unknown>
  /** After the drain, before the sync stops (e.g. a last report upload). */
  beforeSyncStop?(sync: Y): Promise<void>
  stopSync(sync: Y): Promise<void>
}

export async function runGateServe<
  C extends GateServeConfig,
  S extends { close(): Promise<void> },
  G extends ServedGate,
  Y extends Pick<SyncHandle, 'reloadCredentials'>,
>(o: GateServeOptions<C, S, G, Y>): Promise<void> {
  // runMain reads drainTimeoutMs when a signal arrives, so it can follow --drain-timeout.
  const options = { name: o.name, drainTimeoutMs: 40_000 }
  await runMain(options, async () => {
    const config = o.readConfig()
    const drainMs = config.drainTimeoutMs
    options.drainTimeoutMs = drainMs + 10_000
    // A gate logs a line per refused connection: one write per line was the largest cost of
    // the reject path (15-20 % of its CPU). Lines are gathered up to 4 KiB and written at
    // least every 100 ms, so a burst of refusals costs a write per dozen lines; the exit
    // handler and the orderly stop write what is left.
    const destination = stdoutDestination({ minLength: 4096, periodicFlush: 100 })
    process.once('exit', () => flushQuietly(destination))
    const logger = createLogger({
      name: o.name,
      level: config.logLevel,
      pretty: false,
      destination,
    })
    for (const warning of config.warnings ?? []) logger.warn(warning)
    const store = await o.openStore(config.dbPath)
    const gate = await o.build(config, store, logger)
    try {
      await gate.start()
    } catch (err) {
      await gate.stop(0)
      await store.close()
      throw new StartupError(`cannot listen: ${(err as Error).message}`, { cause: err })
    }
    let sync: Y | undefined
    try {
      sync = o.startSync(config, store, gate, logger)
    } catch (err) {
      // Unreadable certificate or CA files: the operator has to fix the configuration.
      await gate.stop(0)
      await store.close()
      throw new StartupError(`control plane: ${(err as Error).message}`, { cause: err })
    }
    logger.info(o.ready(config, gate), `${o.name} ready`)
    // SIGHUP (a renewal's deploy hook, `systemctl reload`): the control-plane client takes the
    // certificate, key and CA its files hold now, and the bearer token the config gives now
    // (after `edgegate node rotate-token`: in the config file, or the file its `_FILE` variable
    // names); a bad set, or a config that no longer loads, keeps the previous ones.
    const reload = credentialReloader(logger, () => {
      if (sync === undefined) return undefined
      let token: string | undefined
      if (config.controlPlane?.auth.kind === 'token') {
        token = o.readConfig().controlPlane?.auth.token
        if (token === undefined) {
          throw new Error('the config no longer gives a control-plane token; restart to change how the gate signs in')
        }
      }
      return sync.reloadCredentials(token)
    })
    const stop = async () => {
      logger.info('stopping: no new connections')
      await gate.stop(drainMs)
      if (sync !== undefined) {
        await o.beforeSyncStop?.(sync)
        await o.stopSync(sync)
      }
      await store.close()
      logger.info('stopped')
      await new Promise<void>((resolve) => {
        destination.once('close', () => resolve())
        destination.end()
      })
    }
    return { stop, reload }
  })
}

/** Write what is still queued before the process exits (an exit is not the orderly stop). */
function flushQuietly(destination: StdoutDestination): void {
  try {
    destination.flushSync()
  } catch {
    // Already closed by the orderly stop, or stdout is gone: nothing left to write.
  }
}
