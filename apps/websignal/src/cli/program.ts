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

/** What `serve --help` adds: the settings that are not flags, and the signals (README: Configuration). */
const SERVE_HELP = `Environment:
  WEBSIGNAL_CONFIG                   the config file when --config is not given
  WEBSIGNAL_CONFIG_DIR               where the default config websignal.json is when neither names
                                     one (default /etc/gatehouse)
  WEBSIGNAL_LOG_LEVEL                overrides log_level
  WEBSIGNAL_CONTROL_PLANE_TOKEN      the control-plane bearer token (or ..._FILE, a file holding it)
  WEBSIGNAL_ANALYTICS_TOKEN          the analytics https output's bearer token (or ..._FILE)
  WEBSIGNAL_ANALYTICS_SECRET         the visitor-hash secret (or ..._FILE)

Signals:
  SIGTERM, SIGINT   flush what was read, save read positions, release the lease and exit
                    (a second one exits at once)
  SIGHUP            read the control-plane token, client certificate, key and CA files again
                    (after \`edgegate node rotate-token\` or a renewal); other settings need a restart.
                    Run in a terminal, SIGHUP (the terminal closed) stops it like SIGTERM`

/** What `replay --help` adds: which input of the config a log is read as (README: Commands). */
const REPLAY_HELP = `With --config, the log is read as serve reads the input it belongs to: the input at that
path, else the one it is a rotated name of (access.log.1, access.log-20261125 beside access.log),
else the config's only input. That input's format, syslog, JSON fields, site and host are used
(lines without a host: the machine's host name when the input names none, as serve does);
--format, --syslog, --site and --host override them. Without --config, --format is required and
site and host are "replay".

Nothing is sent and the store is not touched; a summary goes to standard error.`

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

  withExamples(
    program
      .command('serve')
      .description('tail the configured logs, aggregate in the store, detect and publish')
      .option('--config <file>', CONFIG_HELP),
    ['websignal serve --config /etc/gatehouse/websignal.json'],
  )
    .addHelpText('after', SERVE_HELP)
    .action(async (o) => (await import('./serve.ts')).serveCommand(o))

  withExamples(
    program
      .command('doctor')
      .description('validate the config, secret files, patterns and inputs without touching the store or the network')
      .option('--config <file>', CONFIG_HELP),
    ['websignal doctor --config /etc/gatehouse/websignal.json'],
  ).action(async (o) => (await import('./doctor.ts')).doctorCommand(o, io))

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

  withExamples(
    program
      .command('replay')
      .description('run detection over a log file and print the signals it would send (JSON lines)')
      .requiredOption('--log <file>', 'access log to read from the start (required)')
      .addOption(
        new Option(
          '--format <format>',
          "log format (default: the --config input's; required without --config)",
        ).choices([...LOG_FORMATS]),
      )
      .option('--syslog', 'the lines are wrapped in a syslog envelope (default: as the --config input says)')
      .option('--site <name>', 'site name for the signals (default: the --config input\'s, else "replay")')
      .option('--host <name>', "host name for lines that carry none (default: the --config input's, see below)")
      .option('--window <duration>', 'aggregation window (default from --config, else 5m)')
      .option('--config <file>', "the agent's config: thresholds, window, pattern lists and how to read the log"),
    [
      'websignal replay --log /var/log/nginx/access.log --format combined',
      'websignal replay --log /var/log/nginx/access.log.1 --config /etc/gatehouse/websignal.json',
      'websignal replay --log access.json --format json --window 1m --site shop --host www.example.org',
    ],
  )
    .addHelpText('after', REPLAY_HELP)
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
