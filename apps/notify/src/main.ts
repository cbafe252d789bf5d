#!/usr/bin/env node
/**
 * notify: the notification service. Reads flags and NOTIFY_* variables, opens the
 * database (migrations run at startup), listens, and drains on SIGTERM/SIGINT.
 */
import { createLogger, describeSchema, packageVersion, parseListenAddress, runMain } from '@gatehouse/kit'
import { readConfig, schema } from './config.ts'
import { openNotifyDatabase } from './db/open.ts'
import { buildServer } from './server.ts'

const argv = process.argv.slice(2)
if (argv.includes('-help') || argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(
    `usage: notify [flags]\n\nFlags take one dash or two (-listen, --listen=ADDR). Flags > NOTIFY_* environment > JSON file > defaults.\n\n  --config FILE, $NOTIFY_CONFIG (default /etc/gatehouse/notify.json when it exists)\n      JSON file whose keys are the names below (listen, database, ...)\n${describeSchema(schema).join('\n')}\n\nexample:\n  notify -listen 127.0.0.1:8080 -database sqlite:/var/lib/notify/notify.db\n`,
  )
  process.exit(0)
}
if (argv.includes('-version') || argv.includes('--version') || argv.includes('-V')) {
  process.stdout.write(`${packageVersion(new URL('../package.json', import.meta.url))}\n`)
  process.exit(0)
}

await runMain({ name: 'notify' }, async () => {
  const config = readConfig(argv, process.env)
  const logger = createLogger({ name: 'notify', level: config.logLevel })
  const database = await openNotifyDatabase(config.database)
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
