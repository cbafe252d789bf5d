/**
 * The command line (commander): `serve`, `doctor`, `status`, `replay`. Flags before positional
 * arguments, `--help` on every command, exit 0 on success, 1 on failure, 2 on a usage error.
 * Built on the kit's app shell; each command's module is imported when it runs.
 */

import { type Command, createCli, Option, runCli, withExamples } from '@gatehouse/kit/cli/program.ts'
import { AppError } from '@gatehouse/kit/errors.ts'
import { DEFAULT_CONFIG } from '../config.ts'
import { LOG_FORMATS } from '../logs/parser.ts'
import { type Io, processIo } from './io.ts'

const CONFIG_HELP = `JSON config file (default: $WEBSIGNAL_CONFIG, then ${DEFAULT_CONFIG})`

export function buildProgram(io: Io = processIo): Command {
  const program = createCli({
    name: 'websignal',
    description: 'Web signal agent: access logs -> shared Redis store -> scanner signals for the control plane',
    packageJson: new URL('../../package.json', import.meta.url),
    out: io.out,
    err: io.err,
  })
  withExamples(program, [
    'websignal doctor --config /etc/gatehouse/websignal.json',
    'websignal serve --config /etc/gatehouse/websignal.json',
    'websignal status',
    'websignal replay --log /var/log/nginx/access.log --format combined',
  ])

  program
    .command('serve')
    .description('tail the configured logs, aggregate in the store, detect and publish')
    .option('--config <file>', CONFIG_HELP)
    .action(async (o) => (await import('./serve.ts')).serveCommand(o))

  program
    .command('doctor')
    .description('validate the config, secret files, patterns and inputs without touching the store or the network')
    .option('--config <file>', CONFIG_HELP)
    .action(async (o) => (await import('./doctor.ts')).doctorCommand(o, io))

  withExamples(
    program
      .command('status')
      .description(
        'whether the running agent is ready and publishing, and how far each input is read (like fail2ban-client status)',
      )
      .option('--config <file>', CONFIG_HELP)
      .option('--json', 'print JSON for scripts'),
    ['websignal status', 'websignal status --json --config /etc/gatehouse/websignal.json'],
  ).action(async (o) => (await import('./status.ts')).statusCommand(o, io))

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
    .action(async (o) => (await import('./replay.ts')).replayCommand(o, io))
  return program
}

/** Parse and run; returns the exit code (`serve` keeps running and exits through its signal handling). */
export function run(argv: string[], io: Io = processIo): Promise<number> {
  // The agent's own `usage` error (a bad flag value found after parsing) is a usage error: exit 2.
  return runCli(buildProgram(io), argv, {
    exitCodeFor: (err) => (err instanceof AppError && err.code === 'usage' ? 2 : undefined),
  })
}
