#!/usr/bin/env node
/**
 * artsvc                 run the server (also `artsvc serve`)
 * artsvc publish ...     publish a ZIP bundle (see --help)
 * artsvc login|list|open|share   manage artifacts (cli/program.ts)
 * artsvc mcp-bridge      loopback MCP bridge to an mTLS-protected management URL (see --help)
 */
import {
  describeSchema,
  escapeTerminal,
  exitWithError,
  packageVersion,
  parseListenAddress,
  runMain,
  StartupError,
} from '@gatehouse/kit'
import { runCli } from '@gatehouse/kit/cli/program.ts'
import { mcpBridgeCommand } from './bridge/command.ts'
import { buildManageProgram, MANAGE_COMMANDS } from './cli/program.ts'
import { PublishError, publish } from './cli/publish.ts'
import { configSchema, loadPublishConfig, loadServerConfig, publishSchema, stderrIsTerminal } from './config.ts'
import { buildServer } from './server.ts'

const USAGE = `usage: artsvc [serve] [--config FILE] [--listen host:port]
       artsvc mcp-bridge [--listen 127.0.0.1:18101] [--url https://…]
       artsvc publish --title <title> --zip <file|folder> [--entrypoint index.html] [--artifact <id>] [--progress auto|always|never]
       artsvc login|list|open|share ...   manage artifacts on a server (artsvc list --help)`

async function serve(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n\nserver settings:\n${describeSchema(configSchema).join('\n')}\n`)
    return
  }
  await runMain({ name: 'artsvc' }, async () => {
    const config = loadServerConfig(argv)
    const svc = await buildServer(config)
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
    svc.ctx.log.info(
      { listen: config.listen, public: config.publicOrigin, content: config.contentOrigin },
      'artsvc listening',
    )
    const timer = setInterval(() => {
      svc.maintenance().catch((err) => svc.ctx.log.error({ err }, 'maintenance failed'))
    }, config.maintenanceInterval)
    timer.unref()
    return async () => {
      clearInterval(timer)
      await svc.close()
    }
  })
}

async function publishCommand(argv: string[]) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n\npublish settings:\n${describeSchema(publishSchema).join('\n')}\n`)
    return
  }
  let config: ReturnType<typeof loadPublishConfig>
  try {
    config = loadPublishConfig(argv)
  } catch (err) {
    if (err instanceof StartupError) {
      for (const line of err.lines) process.stderr.write(`artsvc publish: ${line}\n`)
      process.exit(2)
    }
    throw err
  }
  try {
    const url = await publish(config, process.stderr, stderrIsTerminal())
    process.stdout.write(`${url}\n`)
  } catch (err) {
    if (err instanceof PublishError) {
      // The message may quote the server's refusal (bundle entry names): escaped.
      process.stderr.write(`artsvc publish: ${escapeTerminal(err.message)}\n`)
      process.exit(1)
    }
    exitWithError('artsvc publish', err)
  }
}

const [command, ...rest] = process.argv.slice(2)
if (command === '--version' || command === '-V') {
  process.stdout.write(`${packageVersion(new URL('../package.json', import.meta.url))}\n`)
  process.exit(0)
}
if (command !== undefined && MANAGE_COMMANDS.has(command)) {
  process.exitCode = await runCli(buildManageProgram())
} else if (command === 'publish') await publishCommand(rest)
else if (command === 'serve') await serve(rest)
else if (command === 'mcp-bridge') await mcpBridgeCommand(rest)
else if (command === undefined || command.startsWith('-')) await serve(process.argv.slice(2))
else {
  process.stderr.write(`artsvc: unknown command ${command}\n${USAGE}\n`)
  process.exit(2)
}
