/** `edgegate serve`: the control plane over HTTPS, with retention, trusted-range discovery and the web enforcement controller. */

import { readFileSync } from 'node:fs'
import { bundleExpiry, watchCertificateExpiry } from '@gatehouse/kit/certificate-expiry.ts'
import { secretExposure } from '@gatehouse/kit/config.ts'
import { StartupError } from '@gatehouse/kit/errors.ts'
import { createLogger } from '@gatehouse/kit/logger.ts'
import { formatListenAddress, parseListenAddress } from '@gatehouse/kit/net.ts'
import { runMain } from '@gatehouse/kit/process.ts'
import { createTlsAgent, loadTlsMaterial, reloadServerTls } from '@gatehouse/kit/tls.ts'
import { loadServeConfig } from '../config.ts'
import { openControlSocket } from '../control-socket.ts'
import { openEdgeDatabase } from '../db/open.ts'
import { startExpirySweep } from '../decisions/expiry.ts'
import { startController } from '../enforcement/controller.ts'
import { startNodeHealth } from '../nodes/health.ts'
import { startRetention } from '../observations/retention.ts'
import { buildServer } from '../server.ts'
import { TrustedRanges } from '../trusted/ranges.ts'
import { probeUrl } from './server-probe.ts'

export async function serve(flags: Record<string, unknown>, configFile: string | undefined): Promise<void> {
  await runMain({ name: 'edgegate' }, async () => {
    const loaded = loadServeConfig({ flags, config: configFile })
    const config = loaded.config
    const logger = createLogger({ name: 'edgegate', level: config.log_level })
    const keyExposed = secretExposure(config.tls_key, 'the TLS private key (--tls-key)')
    for (const warning of [...loaded.warnings, ...(keyExposed ? [keyExposed] : [])]) logger.warn(warning)
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
    const database = await openEdgeDatabase(config.database, undefined, {
      backgroundCheckpoints: true,
      onWarning: (message) => logger.warn(message),
    })
    let stopRetention: (() => Promise<void>) | undefined
    let stopController: (() => Promise<void>) | undefined
    let stopNodeHealth: (() => Promise<void>) | undefined
    let stopExpiry: (() => Promise<void>) | undefined
    let closeControlSocket: (() => Promise<void>) | undefined
    try {
      await trusted?.start()
      const {
        app,
        ctx,
        alerts,
        certificateExpiresAt: startExpiry,
      } = await buildServer(config, { database, logger, ...(trusted ? { trusted } : {}) })
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
      closeControlSocket = await openControlSocket(app, {
        path: config.control_socket,
        explicit: (loaded.sources.control_socket ?? 'default') !== 'default',
        listenUrl: probeUrl(formatListenAddress({ host, port: actual })),
        log: { info: (m) => logger.info(m), warn: (m) => logger.warn(m) },
      })
      stopRetention = startRetention(
        database.db,
        database.kind,
        {
          sightingRetentionMs: config.sighting_retention,
          signalRetentionMs: config.signal_retention,
          auditRetentionMs: config.audit_retention,
          deletedDecisionRetentionMs: config.deleted_decision_retention,
          fingerprintRetentionMs: config.fingerprint_retention,
          maxFingerprints: config.max_fingerprints,
          intervalMs: config.retention_interval,
        },
        logger,
        app.metrics,
      )
      stopController = startController({
        db: database.db,
        kind: database.kind,
        settings: ctx.web,
        intervalMs: config.web_enforcement_interval,
        log: logger,
        metrics: app.metrics,
      })
      stopNodeHealth = startNodeHealth({ db: database.db, metrics: app.metrics, logger, alert: ctx.alert }).stop
      stopExpiry = startExpirySweep(database.db, database.kind, logger, app.metrics)
      let certificateExpiresAt = startExpiry
      const readClientCa = () => (config.client_ca ? bundleExpiry(readFileSync(config.client_ca)) : undefined)
      let clientCa = readClientCa()
      // The log says it at every check (6 h); the alert channel once a day, or when it expires.
      const alertOnce = (what: string) => {
        let alerted = { at: 0, level: '' }
        return (level: 'warn' | 'error', message: string) => {
          if (level === alerted.level && Date.now() - alerted.at < 86_400_000) return
          alerted = { at: Date.now(), level }
          const title = level === 'error' ? `${what} has expired` : `${what} expires soon`
          ctx.alert({ title, message, priority: level === 'error' ? 'urgent' : 'high', tags: ['certificate'] })
        }
      }
      const expiry = [
        watchCertificateExpiry({
          metrics: app.metrics,
          logger,
          use: 'server',
          file: config.tls_cert,
          expiresAt: () => certificateExpiresAt,
          onNotice: alertOnce('the TLS certificate'),
        }),
        ...(config.client_ca
          ? [
              watchCertificateExpiry({
                metrics: app.metrics,
                logger,
                use: 'client_ca',
                file: config.client_ca,
                expiresAt: () => clientCa?.at,
                subject: () => clientCa?.subject,
                onNotice: alertOnce('the client CA'),
              }),
            ]
          : []),
      ]
      // SIGHUP (a certificate renewal's deploy hook, `systemctl reload`): new connections get
      // the certificate, key and client CA the files hold now; a bad set keeps the old one.
      const reload = async () => {
        try {
          const { validTo, expiresAt } = reloadServerTls(
            app.server as unknown as Parameters<typeof reloadServerTls>[0],
            { cert: config.tls_cert, key: config.tls_key, ...(config.client_ca ? { ca: config.client_ca } : {}) },
            { requestClientCert: config.client_ca !== undefined },
          )
          certificateExpiresAt = expiresAt
          clientCa = readClientCa()
          logger.info({ valid_to: validTo }, 'TLS certificate reloaded')
        } catch (err) {
          logger.error(
            { reason: (err as Error).message },
            'TLS certificate not reloaded; the previous one stays in use',
          )
        }
        for (const w of expiry) w.check()
      }
      const stop = async () => {
        for (const w of expiry) w.stop()
        await closeControlSocket?.()
        await app.close()
        await stopController?.()
        await stopNodeHealth?.()
        await stopExpiry?.()
        await stopRetention?.()
        trusted?.stop()
        await database.close()
        alerts.stop()
      }
      return { stop, reload }
    } catch (err) {
      await closeControlSocket?.()
      await stopController?.()
      await stopNodeHealth?.()
      await stopExpiry?.()
      await stopRetention?.()
      trusted?.stop()
      await database.close()
      throw err
    }
  })
}
