/**
 * The one command-line convention of every Gatehouse binary, on commander: subcommands with
 * `--help` (and examples), `--version` from the app's package.json, flags before or after
 * positional arguments, exit 0 on success, 1 on failure and 2 on a usage error, and every
 * error as one line on stderr prefixed with the program name.
 *
 * Commands load their work with `import()` inside the action, so `--help` and a small list
 * command never load Fastify, undici or pg.
 */
import { Command, CommanderError } from 'commander'
import { isDatabaseUnavailable, unavailableAdvice } from '../db/unavailable.ts'
import { AppError, StartupError } from '../errors.ts'
import { packageVersion } from '../package-version.ts'
import { escapeTerminal } from '../terminal.ts'
import { typedCommands } from './invoked-as.ts'

export { Command, Option } from 'commander'

/** A wrong command line (missing argument, conflicting flags): exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** A failure the operator can act on, already worded for them: exit 1, one line. */
export class CliError extends Error {
  override readonly name = 'CliError'
}

export interface CliOptions {
  /** Binary name, e.g. `edgegate`: the prefix of every error line. */
  name: string
  description: string
  /** The app's package.json (`new URL('../package.json', import.meta.url)`): `--version` prints its version. */
  packageJson: URL | string
  /** Output streams (tests capture them); default the process's. */
  out?: (text: string) => void
  err?: (text: string) => void
}

export { invokedAs, typedCommands } from './invoked-as.ts'
export { packageVersion }

/**
 * A commander program configured with the Gatehouse convention. Subcommands made with
 * `.command()` inherit it. Run it with `runCli`.
 *
 * @example
 * const program = createCli({ name: 'edgegate', description: '...', packageJson: new URL('../package.json', import.meta.url) })
 * program.command('status').action(async () => (await import('./status.ts')).status())
 * process.exitCode = await runCli(program)
 */
export function createCli(options: CliOptions): Command {
  const out = options.out ?? ((t: string) => void process.stdout.write(t))
  const err = options.err ?? ((t: string) => void process.stderr.write(t))
  const program = new Command(options.name)
  // Help (usage lines, examples) and errors (`see edgegate node list`) name the program the way
  // the user ran it: every line runCli and commander print goes through these two.
  const typed = (text: string) => typedCommands(text, options.name, commandWords(program))
  return program
    .description(options.description)
    .version(packageVersion(options.packageJson), '-V, --version', 'print the version and exit')
    .helpOption('-h, --help', 'show help for the command')
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => out(typed(text)),
      writeErr: (text) => err(typed(text)),
      // commander's messages start with "error: " and may end with a period; make them ours.
      outputError: (text, write) => write(`${options.name}: ${withDashHint(oneLine(text.replace(/^error: /, '')))}\n`),
    })
}

/** The words that may follow the program's name in a command: its subcommands and their aliases. */
function commandWords(program: Command): string[] {
  return program.commands.flatMap((c) => [c.name(), ...c.aliases()])
}

/** Add an "Examples:" block to a command's `--help`. */
export function withExamples(command: Command, examples: string[]): Command {
  return command.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n`)
}

/** An identifier or value that begins with '-' reads as an unknown short option; say how to pass it. */
function withDashHint(message: string): string {
  return /^unknown option '-[^-][^']+'/.test(message)
    ? `${message} (a value that begins with '-' goes after --)`
    : message
}

/** An error message as one line, with any control character escaped: it may quote a file name or a server's words. */
function oneLine(text: string): string {
  return escapeTerminal(
    text
      .trim()
      .replace(/\.$/, '')
      .replace(/\s*\n\s*/g, '; '),
  )
}

export interface RunCliOptions {
  /** Override the exit code for an error (return undefined to keep the default). */
  exitCodeFor?: (err: unknown) => number | undefined
  /**
   * Also accept the Go-style single-dash long flags a spec documents (`-listen ADDR`,
   * `-hook-id=X`, `-help`): see `singleDashLongFlags`.
   */
  singleDashFlags?: boolean
}

/** Every long option name (`listen`, `hook-id`) of `command` and its subcommands, plus help. */
function longOptionNames(command: Command, names = new Set<string>(['help'])): Set<string> {
  for (const option of command.options) if (option.long) names.add(option.long.slice(2))
  for (const sub of command.commands) longOptionNames(sub, names)
  return names
}

/**
 * The arguments with each single-dash long flag the program knows (`-listen`, `-hook-id=X`,
 * `-version`) rewritten to its double-dash form, before `--`. Short flags (`-h`, `-v`), unknown
 * words and values are left as they are, so commander still reports a wrong flag.
 *
 * @example singleDashLongFlags(program, ['-listen', '127.0.0.1:8080']) // ['--listen', '127.0.0.1:8080']
 */
export function singleDashLongFlags(program: Command, argv: string[]): string[] {
  const names = longOptionNames(program)
  const end = argv.indexOf('--')
  return argv.map((arg, i) => {
    if ((end !== -1 && i >= end) || !/^-[a-z][a-z0-9-]+(=|$)/.test(arg)) return arg
    const name = arg.slice(1).split('=', 1)[0]!
    return names.has(name) ? `-${arg}` : arg
  })
}

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on'])
const FALSE_WORDS = new Set(['0', 'false', 'no', 'off'])

/**
 * The arguments with each `--flag=VALUE` of a boolean flag that has a `--no-flag` twin (every
 * schema boolean, see addSchemaOptions) rewritten to `--flag` or `--no-flag`, before `--`:
 * commander takes no value on a boolean, and the docs print `--flag=false`. Another value is a
 * usage error that names the words accepted.
 *
 * @example booleanFlagValues(program, ['--web-shadow-enabled=false']) // ['--no-web-shadow-enabled']
 */
export function booleanFlagValues(program: Command, argv: string[]): string[] {
  const names = longOptionNames(program)
  const end = argv.indexOf('--')
  return argv.map((arg, i) => {
    const m = /^--([a-z][a-z0-9-]*)=(.*)$/.exec(arg)
    if (!m || (end !== -1 && i >= end) || !names.has(`no-${m[1]}`)) return arg
    const value = m[2]!.toLowerCase()
    if (TRUE_WORDS.has(value)) return `--${m[1]}`
    if (FALSE_WORDS.has(value)) return `--no-${m[1]}`
    throw new UsageError(`--${m[1]} takes true or false (or 1/0, yes/no, on/off), not "${m[2]}"`)
  })
}

/**
 * Parse `argv` (default `process.argv.slice(2)`) and run the action. Returns the exit code:
 * 0, 1 for a failure (`CliError`, `AppError`, `StartupError`, an unavailable database and anything unexpected), 2 for a
 * usage error (commander's, `UsageError`); an action may set `process.exitCode` itself. Errors are printed one line each; an unexpected error
 * prints its stack only when `GATEHOUSE_DEBUG` is set.
 */
export async function runCli(
  program: Command,
  argv: string[] = process.argv.slice(2),
  options: RunCliOptions = {},
): Promise<number> {
  const write = (text: string) => program.configureOutput().writeErr!(text)
  const name = program.name()
  quietOnClosedPipe()
  try {
    // Bare `app` prints the help on stderr and is a usage error, as with git or cscli.
    if (argv.length === 0 && program.commands.length > 0 && !hasDefaultCommand(program)) {
      write(program.helpInformation())
      return 2
    }
    const stray = strayCommand(program, argv)
    if (stray !== undefined) {
      const known = program.commands.map((c) => c.name()).filter((c) => c !== 'help')
      throw new UsageError(`unknown command '${stray}' (commands: ${known.join(', ')}; see ${name} --help)`)
    }
    const args = options.singleDashFlags ? singleDashLongFlags(program, argv) : argv
    await program.parseAsync(booleanFlagValues(program, args), { from: 'user' })
    // An action that already printed its outcome may set process.exitCode (a refresh job
    // that partly failed) instead of throwing a second message.
    return Number(process.exitCode ?? 0)
  } catch (err) {
    const code = options.exitCodeFor?.(err)
    if (err instanceof CommanderError) return code ?? (err.exitCode === 0 ? 0 : 2)
    if (err instanceof StartupError) {
      for (const line of err.lines) write(`${name}: ${escapeTerminal(line)}\n`)
      return code ?? 1
    }
    if (err instanceof UsageError || err instanceof CliError || err instanceof AppError) {
      write(`${name}: ${oneLine(err.message)}\n`)
      return code ?? (err instanceof UsageError ? 2 : 1)
    }
    const e = err as Error
    // Not a bug: another process holds the SQLite file, or PostgreSQL went away mid-command.
    if (isDatabaseUnavailable(err)) {
      write(`${name}: the database is unavailable (${oneLine(e.message)}); ${unavailableAdvice(err)}\n`)
      return code ?? 1
    }
    write(
      `${name}: unexpected error: ${process.env.GATEHOUSE_DEBUG ? (e?.stack ?? String(err)) : oneLine(e?.message ?? String(err))}\n`,
    )
    return code ?? 1
  }
}

let pipeGuard = false

/**
 * `app list | head` closes the pipe while we are still writing: stop quietly with 0, as
 * `ls | head` does, instead of dying with an EPIPE stack trace.
 */
function quietOnClosedPipe(): void {
  if (pipeGuard) return
  pipeGuard = true
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      // A pipe gives EPIPE; a socket pair (a parent's spawn) may give ECONNRESET instead.
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') process.exit(0)
      throw err
    })
  }
}

/**
 * With a default command (`notify` is `notify serve`), commander hands an unknown first word to
 * it as an argument: `notify bogus` said "too many arguments for 'serve'". A first word that is
 * no command, where the default command takes no arguments, is an unknown command.
 */
function strayCommand(program: Command, argv: string[]): string | undefined {
  if (!hasDefaultCommand(program)) return undefined
  const first = argv[0]
  if (first === undefined || first.startsWith('-')) return undefined
  if (program.commands.some((c) => c.name() === first || c.aliases().includes(first))) return undefined
  const name = (program as unknown as { _defaultCommandName: string })._defaultCommandName
  const fallback = program.commands.find((c) => c.name() === name)
  return fallback && fallback.registeredArguments.length === 0 ? first : undefined
}

function hasDefaultCommand(program: Command): boolean {
  return (program as unknown as { _defaultCommandName?: string | null })._defaultCommandName != null
}
