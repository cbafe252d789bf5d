/**
 * `serve` runs the gate; `doctor` validates and summarises the same inputs without opening
 * the database, contacting a backend or binding a port.
 */
import { existsSync } from 'node:fs'
import { formatDuration } from '@gatehouse/kit/durations.ts'
import { StartupError } from '@gatehouse/kit/errors.ts'
import { createLogger } from '@gatehouse/kit/logger.ts'
import { runMain } from '@gatehouse/kit/process.ts'
import { loadTlsMaterial } from '@gatehouse/kit/tls.ts'
import { loadServeConfig, type ServeConfig } from '../config.ts'
import { openStore } from '../db/index.ts'
import { formatAddress } from '../gate/relay.ts'
import { buildServer } from '../server.ts'
import { type GateSync, startGateSync } from '../sync/gate-sync.ts'
import type { Io } from './io.ts'

export function readConfig(flags: Record<string, unknown>): ServeConfig {
  return loadServeConfig({ flags, fileExists: existsSync })
}

export async function serveCommand(flags: Record<string, unknown>): Promise<void> {
  // runMain reads drainTimeoutMs when a signal arrives, so it can follow --drain-timeout.
  const options = { name: 'tlsgate', drainTimeoutMs: 40_000 }
  await runMain(options, async () => {
    const config = readConfig(flags)
    const drainMs = config.drainTimeoutMs
    options.drainTimeoutMs = drainMs + 10_000
    const logger = createLogger({ name: 'tlsgate', level: config.logLevel, pretty: false })
    const store = await openStore(config.dbPath)
    const gate = await buildServer(config, { store, logger })
    try {
      await gate.start()
    } catch (err) {
      await gate.stop(0)
      await store.close()
      throw new StartupError(`cannot listen: ${(err as Error).message}`, { cause: err })
    }
    let sync: GateSync | undefined
    if (config.controlPlane) {
      try {
        sync = startGateSync({
          controlPlane: config.controlPlane,
          store,
          bypass: gate.bypass,
          logger,
          metrics: gate.metrics,
          smtpReports: gate.smtpReports,
        })
      } catch (err) {
        // Unreadable certificate or CA files: the operator has to fix the configuration.
        await gate.stop(0)
        await store.close()
        throw new StartupError(`control plane: ${(err as Error).message}`, { cause: err })
      }
    }
    logger.info(
      {
        routes: gate.addresses(),
        metrics: gate.metricsAddress(),
        enforce_unknown: config.enforceUnknown,
        proxy_protocol: config.proxyProtocol,
        max_fingerprints: config.maxFingerprints,
        control_plane_sync: config.controlPlane ? 'configured' : 'disabled',
        trusted_ranges: { static: gate.bypass.staticRanges.length, control_plane: gate.bypass.managedRanges.length },
      },
      'tlsgate ready',
    )
    return async () => {
      logger.info('stopping: no new connections')
      await gate.stop(drainMs)
      // The current hour's SMTP counts (a partial coverage interval) go out with a final upload attempt.
      await sync?.uploadSmtpReports(true)
      // Sync before the database closes: it must not touch it afterwards.
      await sync?.stop()
      await store.close()
      logger.info('stopped')
    }
  })
}

export function doctorCommand(flags: Record<string, unknown>, io: Io): void {
  const c = readConfig(flags)
  // Certificate files are read (not the database, backends or ports) so a typo shows up now.
  if (c.controlPlane?.auth.kind === 'mtls') {
    const a = c.controlPlane.auth
    loadTlsMaterial({ cert: a.clientCert, key: a.clientKey, ca: a.ca })
  } else if (c.controlPlane?.auth.kind === 'token' && c.controlPlane.auth.ca) {
    loadTlsMaterial({ ca: c.controlPlane.auth.ca })
  }
  const d = (ms: number) => (ms === 0 ? 'off' : formatDuration(ms))
  const lines = [
    'configuration OK',
    `config file: ${c.configPath}${c.configFileFound ? '' : ' (not found; defaults apply)'}`,
    `database: ${c.dbPath} (not opened)`,
    'routes:',
    ...c.routes.map(
      (r) => `  ${r.name} -> ${formatAddress(r.backend)}${r.mode === 'smtp' ? ' (SMTP, STARTTLS)' : ' (TLS)'}`,
    ),
    `metrics: ${c.metricsListen ? `http://${formatAddress(c.metricsListen)}/metrics` : 'disabled'}`,
    `verdicts: ${c.enforceUnknown ? 'only approved (and trusted) clients pass (--enforce-unknown)' : 'blocked clients refused; unknown and pending pass'}`,
    `PROXY protocol v2 to the backend: ${c.proxyProtocol ? 'on' : 'off'}`,
    `trusted ranges (bypass): ${c.trustedRanges.length > 0 ? c.trustedRanges.join(', ') : 'none configured'}${c.controlPlane ? ' (plus any from the control plane)' : ''}`,
    `max_fingerprints: ${c.maxFingerprints < 0 ? 'unlimited' : c.maxFingerprints}`,
    `limits: ${c.ipRate}/s per source IP (burst ${c.ipBurst}), ${c.maxConnections} concurrent connections`,
    `timeouts: hello ${d(c.helloTimeoutMs)}, backend ${d(c.backendTimeoutMs)}, idle ${d(c.idleTimeoutMs)}, drain ${d(c.drainTimeoutMs)}`,
    `sighting retention: ${d(c.sightingRetentionMs)}`,
    ...(c.routes.some((r) => r.mode === 'smtp') ? [`SMTP reports: namespace ${c.smtpNamespace}, hourly`] : []),
    c.controlPlane
      ? `control plane: ${c.controlPlane.url} as ${c.controlPlane.instanceId}, auth ${c.controlPlane.auth.kind === 'token' ? 'bearer token' : 'mutual TLS'}, every ${d(c.controlPlane.syncIntervalMs)}${c.controlPlane.serverName ? `, server name ${c.controlPlane.serverName}` : ''}`
      : 'control plane: sync disabled (no control_plane.url)',
  ]
  io.out(`${lines.join('\n')}\n`)
}
