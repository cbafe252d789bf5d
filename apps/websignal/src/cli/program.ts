/**
 * The command line (commander): `serve`, `doctor`, `replay`. Flags before positional
 * arguments, `--help` on every command, exit 0 on success, 1 on failure, 2 on a usage error.
 * The command bodies live in their own modules so they can move onto the kit's app shell.
 */
import { AppError, StartupError } from '@gatehouse/kit'
import { Command, CommanderError, Option } from 'commander'
import { DEFAULT_CONFIG } from '../config.ts'
import { LOG_FORMATS } from '../logs/parser.ts'
import { VERSION } from '../version.ts'
import { doctorCommand } from './doctor.ts'
import { type Io, processIo } from './io.ts'
import { replayCommand } from './replay.ts'
import { serveCommand } from './serve.ts'

const CONFIG_HELP = `JSON config file (default: $WEBSIGNAL_CONFIG, then ${DEFAULT_CONFIG})`

export function buildProgram(io: Io = processIo): Command {
  const program = new Command('websignal')
    .description('Web signal agent: access logs -> shared Redis store -> scanner signals for the control plane')
    .version(VERSION)
    .exitOverride()
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      outputError: (s, write) => write(`websignal: ${s.replace(/^error: /, '').replace(/\.?\n$/, '')}\n`),
    })
    .showSuggestionAfterError(true)

  program
    .command('serve')
    .description('tail the configured logs, aggregate in the store, detect and publish')
    .option('--config <file>', CONFIG_HELP)
    .action((o) => serveCommand(o))

  program
    .command('doctor')
    .description('validate the config, secret files, patterns and inputs without touching the store or the network')
    .option('--config <file>', CONFIG_HELP)
    .action((o) => doctorCommand(o, io))

  program
    .command('replay')
    .description('run detection over a log file and print the signals it would send (JSON lines)')
    .requiredOption('--log <file>', 'access log to read from the start')
    .addOption(new Option('--format <format>', 'log format').choices([...LOG_FORMATS]).makeOptionMandatory())
    .option('--syslog', 'the lines are wrapped in a syslog envelope')
    .option('--site <name>', 'site name for the signals', 'replay')
    .option('--host <name>', 'host name when the log has none')
    .option('--window <duration>', 'aggregation window (default from --config, else 5m)')
    .option('--config <file>', 'take thresholds, window and pattern lists from this config')
    .action((o) => replayCommand(o, io))
  return program
}

/** Parse and run; returns the exit code (`serve` keeps running and exits through its signal handling). */
export async function run(argv: string[], io: Io = processIo): Promise<number> {
  const program = buildProgram(io)
  try {
    await program.parseAsync(argv, { from: 'user' })
    return 0
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2
    if (err instanceof AppError) {
      io.err(`websignal: ${err.message}\n`)
      return err.statusCode === 400 && err.code === 'usage' ? 2 : 1
    }
    if (err instanceof StartupError) {
      for (const line of err.lines) io.err(`websignal: ${line}\n`)
      return 1
    }
    io.err(`websignal: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`)
    return 1
  }
}
