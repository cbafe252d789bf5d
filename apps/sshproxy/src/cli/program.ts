/**
 * The command line, on the kit's app shell: `--help` on every command, `--version`, exit 0 on
 * success, 1 on failure, 2 on a usage error. Flags go before the fingerprint argument (the spec's
 * rule for this binary). Each action imports its module when it runs, so `--help` and `list`
 * never load the gate, the sync client or undici.
 */

import { type Command, createCli, runCli, withExamples } from '@gatehouse/kit/cli/program.ts'
import { addSchemaOptions, schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import { AppError } from '@gatehouse/kit/errors.ts'
import { DEFAULT_CONFIG, DEFAULT_DB, flagSchema, loadDbPath } from '../config.ts'
import { type Io, processIo } from './io.ts'

const DB_HELP = `SQLite database (env SSHPROXY_DB; else the config file's "db"; else ${DEFAULT_DB})`
const CONFIG_HELP = `JSON config file whose "db" names the database (env SSHPROXY_CONFIG; default ${DEFAULT_CONFIG} when it exists)`

function dbOf(opts: { db?: string; config?: string }): string {
  return loadDbPath({
    ...(opts.db === undefined ? {} : { db: opts.db }),
    ...(opts.config === undefined ? {} : { config: opts.config }),
  })
}

const entries = () => import('./entries.ts')

export function buildProgram(io: Io = processIo): Command {
  const program = createCli({
    name: 'sshproxy',
    description: 'SSH gate: fingerprints SSH clients before key exchange and only lets approved ones reach sshd',
    packageJson: new URL('../../package.json', import.meta.url),
    out: io.out,
    err: io.err,
  })
    .enablePositionalOptions()
    .configureOutput({
      outputError: (s, write) =>
        write(
          `sshproxy: ${s.replace(/^error: /, '').replace(/\.?\n$/, '')}${/too many arguments/.test(s) ? ' (flags go before the fingerprint)' : ''}\n`,
        ),
    })
  withExamples(program, [
    'sshproxy serve --route 0.0.0.0:2222=127.0.0.1:22',
    'sshproxy list',
    'sshproxy approve --label "build server" 2edbc78717d7f7d5c4c7e3a0bca94ef7',
    'sshproxy status',
  ])

  const store = (name: string, description: string) =>
    program
      .command(name)
      .description(description)
      .passThroughOptions()
      .option('--db <path>', DB_HELP)
      .option('--config <path>', CONFIG_HELP)

  withExamples(
    store('list', 'list stored fingerprints')
      .option('-v, --verbose', 'add client identification, version and the raw fingerprint material')
      .option('--json', 'print JSON instead of a table'),
    ['sshproxy list', 'sshproxy list -v', 'sshproxy list --json --db /var/lib/sshproxy/sshproxy.db'],
  ).action(async (o) =>
    (await entries()).listCommand(dbOf(o), { verbose: o.verbose === true, json: o.json === true }, io),
  )

  withExamples(
    store('approve', 'approve a fingerprint: its clients reach the backend')
      .option('--label <text>', 'also set the label')
      .option('--for <duration>', 'only for this long (1m to 8760h, e.g. 8h); then it counts as pending')
      .argument('<fingerprint>', '32 hexadecimal characters (from sshproxy list)'),
    [
      'sshproxy approve --label "build server" 2edbc78717d7f7d5c4c7e3a0bca94ef7',
      'sshproxy approve --for 8h --label contractor 2edbc78717d7f7d5c4c7e3a0bca94ef7',
    ],
  ).action(async (fp: string, o) =>
    (await entries()).verdictCommand(dbOf(o), 'approved', fp, { label: o.label, for: o.for }, io),
  )

  withExamples(
    store('block', 'block a fingerprint: its clients are stopped before key exchange')
      .option('--for <duration>', 'only for this long (1m to 8760h, e.g. 24h); then it counts as pending')
      .argument('<fingerprint>'),
    ['sshproxy block 2edbc78717d7f7d5c4c7e3a0bca94ef7', 'sshproxy block --for 24h 2edbc78717d7f7d5c4c7e3a0bca94ef7'],
  ).action(async (fp: string, o) => (await entries()).verdictCommand(dbOf(o), 'blocked', fp, { for: o.for }, io))

  store('pending', 'mark a fingerprint pending: stopped, even with --allow-unknown')
    .argument('<fingerprint>')
    .action(async (fp: string, o) => (await entries()).verdictCommand(dbOf(o), 'pending', fp, {}, io))

  store('label', "replace a fingerprint's label")
    .argument('<fingerprint>')
    .argument('<label>')
    .action(async (fp: string, label: string, o) => (await entries()).labelCommand(dbOf(o), fp, label, io))

  store('delete', 'remove a fingerprint entry')
    .argument('<fingerprint>')
    .action(async (fp: string, o) => (await entries()).deleteCommand(dbOf(o), fp, io))

  withExamples(
    store('correlate', "sshd log lines that belong to a fingerprint's connections")
      .requiredOption('--log <path>', 'sshd log (syslog or RFC 3339 timestamps)')
      .option('--window <duration>', 'how far around first/last seen to look', '5m')
      .argument('<fingerprint>'),
    ['sshproxy correlate --log /var/log/auth.log 2edbc78717d7f7d5c4c7e3a0bca94ef7'],
  ).action(async (fp: string, o) =>
    (await import('./correlate.ts')).correlateCommand(dbOf(o), { log: o.log, window: o.window }, fp, io),
  )

  withExamples(
    store('backup', 'copy the store to a new file, consistent while serve runs').argument(
      '<file>',
      'the new file (never overwritten)',
    ),
    ['sshproxy backup sshproxy-backup.db'],
  ).action(async (file: string, o) => (await entries()).backupCommand(dbOf(o), file, io))

  const serveLike = (name: string, description: string) =>
    addSchemaOptions(program.command(name).description(description).passThroughOptions(), flagSchema)
  withExamples(serveLike('serve', 'run the gate'), [
    'sshproxy serve --route 0.0.0.0:2222=127.0.0.1:22 --metrics-listen 127.0.0.1:9122',
  ]).action(async (o) => (await import('./serve.ts')).serveCommand(schemaFlags(o, flagSchema)))
  serveLike('doctor', 'validate and summarise the serve inputs without opening the database or any socket').action(
    async (o) => (await import('./serve.ts')).doctorCommand(schemaFlags(o, flagSchema), io),
  )
  withExamples(
    serveLike(
      'status',
      'routes, stored fingerprints by verdict and the last control-plane sync (like fail2ban-client status)',
    ).option('--json', 'print JSON instead of text'),
    ['sshproxy status', 'sshproxy status --json --config /etc/sshproxy/config.json'],
  ).action(async (o) => (await import('./status.ts')).statusCommand(schemaFlags(o, flagSchema), o.json === true, io))
  return program
}

/** Parse and run; returns the exit code for everything but `serve`, which keeps running. */
export function run(argv: string[], io: Io = processIo): Promise<number> {
  return runCli(buildProgram(io), argv, {
    // A malformed fingerprint or label on the command line is a usage error, as the spec's exit codes say.
    exitCodeFor: (err) => (err instanceof AppError && err.statusCode === 400 ? 2 : undefined),
  })
}
