#!/usr/bin/env node
/**
 * edgegate: `serve` runs the control plane; `node`, `admin` and `decision` administer it.
 */
import {
  AppError,
  createLogger,
  createTlsAgent,
  describeSchema,
  exitWithError,
  loadTlsMaterial,
  runMain,
  StartupError,
} from '@gatehouse/kit'
import { GROUPS, groupUsage, runCommand, UsageError } from './cli/commands.ts'
import { checkServeConfig, loadCommandConfig, serveSchema } from './config.ts'
import { openEdgeDatabase } from './db/open.ts'
import { startController } from './enforcement/controller.ts'
import { RegistryError } from './nodes/service.ts'
import { startRetention } from './observations/retention.ts'
import { buildServer } from './server.ts'
import { TrustedRanges } from './trusted/ranges.ts'

const USAGE = `usage: edgegate <command> [flags] [arguments]

commands:
  serve        run the control plane (HTTPS); edgegate serve --help lists its flags
${Object.keys(GROUPS)
  .map((g) => groupUsage(g))
  .join('\n')}

Every command takes --database (or $EDGEGATE_DATABASE) and --config FILE (JSON).`

async function serve(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      `usage: edgegate serve [flags]\n\nflags (flag, environment, config-file key):\n${describeSchema(serveSchema).join('\n')}\n`,
    )
    return
  }
  await runMain({ name: 'edgegate' }, async () => {
    const config = checkServeConfig(loadCommandConfig(serveSchema, argv).config)
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
    let stopController: (() => Promise<void>) | undefined
    try {
      await trusted?.start()
      const { app, ctx } = await buildServer(config, { database, logger, ...(trusted ? { trusted } : {}) })
      const [host, port] = splitListen(config.listen)
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
      stopController = startController({
        db: database.db,
        kind: database.kind,
        settings: ctx.web,
        intervalMs: config.web_enforcement_interval,
        log: logger,
        metrics: app.metrics,
      })
      return async () => {
        await app.close()
        await stopController?.()
        await stopRetention?.()
        trusted?.stop()
        await database.close()
      }
    } catch (err) {
      await stopController?.()
      await stopRetention?.()
      trusted?.stop()
      await database.close()
      throw err
    }
  })
}

function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(':')
  return [listen.slice(0, i).replace(/^\[|\]$/g, ''), Number(listen.slice(i + 1))]
}

async function main() {
  const [command, ...rest] = process.argv.slice(2)
  if (command === 'serve') return serve(rest)
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    process.exit(command === undefined ? 2 : 0)
  }
  if (!GROUPS[command]) {
    process.stderr.write(`edgegate: unknown command ${JSON.stringify(command)}\n${USAGE}\n`)
    process.exit(2)
  }
  try {
    await runCommand(command, rest, (line) => process.stdout.write(`${line}\n`))
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`edgegate: ${err.message}\n`)
      process.exit(2)
    }
    if (err instanceof AppError || err instanceof RegistryError) {
      process.stderr.write(`edgegate: ${err.message}\n`)
      process.exit(1)
    }
    exitWithError('edgegate', err)
  }
}

await main()
