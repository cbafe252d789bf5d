/**
 * The command line, on the kit's app shell: `--help` on every command, `--version`, exit 0 on
 * success, 1 on failure, 2 on a usage error. Flags go before the fingerprint argument (as for
 * the SSH gate). Each action imports its module when it runs, so `--help` and `list` never
 * load the gate, the sync client or undici.
 */
import { type Command, createCli, runCli, withExamples } from '@gatehouse/kit/cli/program.ts'
import { addSchemaOptions, schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import { AppError } from '@gatehouse/kit/errors.ts'
import { DEFAULT_CONFIG, DEFAULT_DB, flagSchema, loadDbPath } from '../config.ts'
import { type Io, processIo } from './io.ts'

const DB_HELP = `SQLite database (env TLSGATE_DB; else the config file's "db"; else ${DEFAULT_DB})`
const CONFIG_HELP = `JSON config file whose "db" names the database (env TLSGATE_CONFIG; default ${DEFAULT_CONFIG} when it exists)`
const FP = 't13d1516h2_8daaf6152771_d8a2da3f94cd'

function dbOf(opts: { db?: string; config?: string }): string {
  return loadDbPath({
    ...(opts.db === undefined ? {} : { db: opts.db }),
    ...(opts.config === undefined ? {} : { config: opts.config }),
  })
}

const entries = () => import('./entries.ts')

export function buildProgram(io: Io = processIo): Command {
  const program = createCli({
    name: 'tlsgate',
    description: 'TLS gate: fingerprints TLS clients (JA4, JA3) before the web or mail server sees them',
    packageJson: new URL('../../package.json', import.meta.url),
    out: io.out,
    err: io.err,
  })
    .enablePositionalOptions()
    .configureOutput({
      outputError: (s, write) =>
        write(
          `tlsgate: ${s.replace(/^error: /, '').replace(/\.?\n$/, '')}${/too many arguments/.test(s) ? ' (flags go before the fingerprint)' : ''}\n`,
        ),
    })
  withExamples(program, [
    'tlsgate serve --route 0.0.0.0:443=127.0.0.1:8443',
    'tlsgate list',
    `tlsgate block ${FP}`,
    'tlsgate doctor --route 0.0.0.0:443=127.0.0.1:8443',
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
      .option('-v, --verbose', 'add JA3, refusals and the raw JA4 lists')
      .option('--json', 'print JSON instead of a table'),
    ['tlsgate list', 'tlsgate list -v', 'tlsgate list --json --db /var/lib/tlsgate/tlsgate.db'],
  ).action(async (o) =>
    (await entries()).listCommand(dbOf(o), { verbose: o.verbose === true, json: o.json === true }, io),
  )

  withExamples(
    store('approve', 'approve a fingerprint: its clients pass even with --enforce-unknown')
      .option('--label <text>', 'also set the label')
      .option('--for <duration>', 'only for this long (1m to 8760h, e.g. 4h); then it counts as pending')
      .argument('<fingerprint>', 'a JA4 fingerprint (from tlsgate list)'),
    [`tlsgate approve --label "monitoring" ${FP}`, `tlsgate approve --for 8h ${FP}`],
  ).action(async (fp: string, o) =>
    (await entries()).verdictCommand(dbOf(o), 'approved', fp, { label: o.label, for: o.for }, io),
  )

  withExamples(
    store('block', 'block a fingerprint: its clients are refused before the backend is contacted')
      .option('--for <duration>', 'only for this long (1m to 8760h, e.g. 24h); then it counts as pending')
      .argument('<fingerprint>'),
    [`tlsgate block ${FP}`, `tlsgate block --for 24h ${FP}`],
  ).action(async (fp: string, o) => (await entries()).verdictCommand(dbOf(o), 'blocked', fp, { for: o.for }, io))

  store('pending', 'mark a fingerprint pending: passes, unless --enforce-unknown')
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
    store('backup', 'copy the store to a new file, consistent while serve runs').argument(
      '<file>',
      'the new file (never overwritten)',
    ),
    ['tlsgate backup tlsgate-backup.db'],
  ).action(async (file: string, o) => (await entries()).backupCommand(dbOf(o), file, io))

  const serveLike = (name: string, description: string) =>
    addSchemaOptions(program.command(name).description(description).passThroughOptions(), flagSchema)
  withExamples(serveLike('serve', 'run the gate'), [
    'tlsgate serve --route 0.0.0.0:443=127.0.0.1:8443 --proxy-protocol --metrics-listen 127.0.0.1:9123',
    'tlsgate serve --route smtp:0.0.0.0:25=127.0.0.1:2525',
  ]).action(async (o) => (await import('./serve.ts')).serveCommand(schemaFlags(o, flagSchema)))
  serveLike('doctor', 'validate and summarise the serve inputs without opening the database or any socket').action(
    async (o) => (await import('./serve.ts')).doctorCommand(schemaFlags(o, flagSchema), io),
  )
  withExamples(
    serveLike(
      'status',
      'routes, stored fingerprints by verdict and the last control-plane sync (like fail2ban-client status)',
    ).option('--json', 'print JSON instead of text'),
    ['tlsgate status --route 0.0.0.0:443=127.0.0.1:8443', 'tlsgate status --json --config /etc/tlsgate/config.json'],
  ).action(async (o) => (await import('./status.ts')).statusCommand(schemaFlags(o, flagSchema), o.json === true, io))
  return program
}

/** Parse and run; returns the exit code for everything but `serve`, which keeps running. */
export function run(argv: string[], io: Io = processIo): Promise<number> {
  return runCli(buildProgram(io), argv, {
    // A malformed fingerprint or label on the command line is a usage error.
    exitCodeFor: (err) => (err instanceof AppError && err.statusCode === 400 ? 2 : undefined),
  })
}
