/**
 * `serve` runs the gate; `doctor` validates and summarises the same inputs without opening
 * the database, contacting a backend or binding a port.
 */
import { existsSync, readFileSync } from 'node:fs'
import { controlPlaneCertificateReport } from '@gatehouse/kit/certificate-expiry.ts'
import { formatDuration } from '@gatehouse/kit/durations.ts'
import { StartupError } from '@gatehouse/kit/errors.ts'
import { describeConnectionCap } from '@gatehouse/kit/gate-limits.ts'
import { runGateServe } from '@gatehouse/kit/gate-serve.ts'
import { describeSplice, findSpliceHelper } from '@gatehouse/kit/splice-relay.ts'
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

export function serveCommand(flags: Record<string, unknown>): Promise<void> {
  return runGateServe({
    name: 'tlsgate',
    readConfig: () => readConfig(flags),
    openStore: (path) => openStore(path),
    build: (config, store, logger) => buildServer(config, { store, logger }),
    startSync: (config, store, gate, logger): GateSync | undefined =>
      config.controlPlane
        ? startGateSync({
            controlPlane: config.controlPlane,
            store,
            bypass: gate.bypass,
            logger,
            metrics: gate.metrics,
            smtpReports: gate.smtpReports,
          })
        : undefined,
    ready: (config, gate) => ({
      routes: gate.addresses(),
      metrics: gate.metricsAddress(),
      enforce_unknown: config.enforceUnknown,
      proxy_protocol: config.proxyProtocol,
      max_fingerprints: config.maxFingerprints,
      control_plane_sync: config.controlPlane ? 'configured' : 'disabled',
      trusted_ranges: { static: gate.bypass.staticRanges.length, control_plane: gate.bypass.managedRanges.length },
    }),
    // The current hour's SMTP counts (a partial coverage interval) go out with a final upload attempt.
    beforeSyncStop: (sync) => sync.uploadSmtpReports(true),
    stopSync: (sync) => sync.stop(),
  })
}

export function doctorCommand(flags: Record<string, unknown>, io: Io): void {
  const c = readConfig(flags)
  // Certificate files are read (not the database, backends or ports) so a typo shows up now.
  let certificates: ReturnType<typeof controlPlaneCertificateReport> = { lines: [], problems: [] }
  if (c.controlPlane?.auth.kind === 'mtls') {
    const a = c.controlPlane.auth
    const material = loadTlsMaterial({ cert: a.clientCert, key: a.clientKey, ca: a.ca })
    certificates = controlPlaneCertificateReport({ clientCert: material.cert!, ca: readFileSync(a.ca) })
  } else if (c.controlPlane?.auth.kind === 'token' && c.controlPlane.auth.ca) {
    loadTlsMaterial({ ca: c.controlPlane.auth.ca })
    certificates = controlPlaneCertificateReport({ ca: readFileSync(c.controlPlane.auth.ca) })
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
    `limits: ${c.ipRate}/s per source IP (burst ${c.ipBurst}), ${describeConnectionCap(c.maxConnections, c.splice?.max ?? 0)}`,
    `timeouts: hello ${d(c.helloTimeoutMs)}, backend ${d(c.backendTimeoutMs)}, idle ${d(c.idleTimeoutMs)}, drain ${d(c.drainTimeoutMs)}`,
    `sighting retention: ${d(c.sightingRetentionMs)}`,
    describeSplice(c.splice, findSpliceHelper()),
    ...(c.routes.some((r) => r.mode === 'smtp') ? [`SMTP reports: namespace ${c.smtpNamespace}, hourly`] : []),
    c.controlPlane
      ? `control plane: ${c.controlPlane.url} as ${c.controlPlane.instanceId}, auth ${c.controlPlane.auth.kind === 'token' ? 'bearer token' : 'mutual TLS'}, every ${d(c.controlPlane.syncIntervalMs)}${c.controlPlane.serverName ? `, server name ${c.controlPlane.serverName}` : ''}`
      : 'control plane: sync disabled (no control_plane.url)',
    ...certificates.lines,
    ...c.warnings.map((w) => `warning: ${w}`),
  ]
  if (certificates.problems.length > 0) throw new StartupError(certificates.problems.join('; '))
  io.out(`${lines.join('\n')}\n`)
}
