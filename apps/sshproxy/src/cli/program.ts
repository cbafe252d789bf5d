/**
 * The command line (commander): flags before positional arguments, `--help` on every
 * command, exit 0 on success, 1 on failure, 2 on a usage error.
 */
import { AppError, type Field, StartupError } from '@gatehouse/kit'
import { Command, CommanderError, Option } from 'commander'
import { DEFAULT_CONFIG, DEFAULT_DB, flagSchema, loadDbPath } from '../config.ts'
import { VERSION } from '../version.ts'
import { correlateCommand } from './correlate.ts'
import { deleteCommand, labelCommand, listCommand, verdictCommand } from './entries.ts'
import { type Io, processIo } from './io.ts'
import { doctorCommand, serveCommand } from './serve.ts'

const DB_HELP = `SQLite database (default ${DEFAULT_DB}; env SSHPROXY_DB)`

function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())
}

/** The options of `serve` and `doctor`, generated from the config schema (one source of docs). */
function addServeOptions(cmd: Command): Command {
  for (const f of Object.values(flagSchema) as Field<unknown>[]) {
    const o = f.options
    if (!o.flag) continue
    const def = o.default === undefined ? '' : ` (default ${String(o.default)})`
    const env = o.env ? `; env ${o.env}` : ''
    const doc =
      o.flag === 'config' ? `JSON config file (default ${DEFAULT_CONFIG}${env})` : `${o.doc ?? ''}${def}${env}`
    const opt = new Option(f.arity === 'none' ? `--${o.flag}` : `--${o.flag} <value>`, doc)
    if (f.arity === 'many') opt.argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v])
    cmd.addOption(opt)
  }
  return cmd
}

function serveFlags(opts: Record<string, unknown>): Record<string, unknown> {
  const flags: Record<string, unknown> = {}
  for (const f of Object.values(flagSchema) as Field<unknown>[]) {
    const flag = f.options.flag
    if (flag && opts[camel(flag)] !== undefined) flags[flag] = opts[camel(flag)]
  }
  return flags
}

function dbOf(opts: { db?: string }): string {
  return loadDbPath(opts.db === undefined ? {} : { db: opts.db })
}

export function buildProgram(io: Io = processIo): Command {
  const program = new Command('sshproxy')
    .description('SSH gate: fingerprints SSH clients before key exchange and only lets approved ones reach sshd')
    .version(VERSION)
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      outputError: (s, write) =>
        write(
          `sshproxy: ${s.replace(/^error: /, '').replace(/\.?\n$/, '')}${/too many arguments/.test(s) ? ' (flags go before the fingerprint)' : ''}\n`,
        ),
    })
    .showSuggestionAfterError(true)

  const store = (name: string, description: string) =>
    program.command(name).description(description).passThroughOptions().option('--db <path>', DB_HELP)

  store('list', 'list stored fingerprints')
    .option('-v, --verbose', 'add client identification, version and the raw fingerprint material')
    .option('--json', 'print JSON instead of a table')
    .action((o) => listCommand(dbOf(o), { verbose: o.verbose === true, json: o.json === true }, io))

  store('approve', 'approve a fingerprint: its clients reach the backend')
    .option('--label <text>', 'also set the label')
    .argument('<fingerprint>', '32 hexadecimal characters (from sshproxy list)')
    .action((fp: string, o) => verdictCommand(dbOf(o), 'approved', fp, o.label, io))

  store('block', 'block a fingerprint: its clients are stopped before key exchange')
    .argument('<fingerprint>')
    .action((fp: string, o) => verdictCommand(dbOf(o), 'blocked', fp, undefined, io))

  store('pending', 'mark a fingerprint pending: stopped, even with --allow-unknown')
    .argument('<fingerprint>')
    .action((fp: string, o) => verdictCommand(dbOf(o), 'pending', fp, undefined, io))

  store('label', "replace a fingerprint's label")
    .argument('<fingerprint>')
    .argument('<label>')
    .action((fp: string, label: string, o) => labelCommand(dbOf(o), fp, label, io))

  store('delete', 'remove a fingerprint entry')
    .argument('<fingerprint>')
    .action((fp: string, o) => deleteCommand(dbOf(o), fp, io))

  store('correlate', "sshd log lines that belong to a fingerprint's connections")
    .requiredOption('--log <path>', 'sshd log (syslog or RFC 3339 timestamps)')
    .option('--window <duration>', 'how far around first/last seen to look', '5m')
    .argument('<fingerprint>')
    .action((fp: string, o) => correlateCommand(dbOf(o), { log: o.log, window: o.window }, fp, io))

  addServeOptions(program.command('serve').description('run the gate').passThroughOptions()).action((o) =>
    serveCommand(serveFlags(o)),
  )
  addServeOptions(
    program
      .command('doctor')
      .description('validate and summarise the serve inputs without opening the database or any socket')
      .passThroughOptions(),
  ).action((o) => doctorCommand(serveFlags(o), io))
  return program
}

/** Parse and run; returns the exit code for everything but `serve`, which keeps running. */
export async function run(argv: string[], io: Io = processIo): Promise<number> {
  const program = buildProgram(io)
  try {
    await program.parseAsync(argv, { from: 'user' })
    return 0
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2
    if (err instanceof AppError) {
      io.err(`sshproxy: ${err.message}\n`)
      return err.statusCode === 400 ? 2 : 1
    }
    if (err instanceof StartupError) {
      for (const line of err.lines) io.err(`sshproxy: ${line}\n`)
      return 1
    }
    io.err(`sshproxy: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`)
    return 1
  }
}
