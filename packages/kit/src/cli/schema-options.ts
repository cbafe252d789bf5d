/**
 * Commander options generated from a kit config schema, so a command's `--help` and its config
 * file, environment variables and defaults come from one description.
 */
import { type Command, Option } from 'commander'
import type { Field, Schema } from '../config.ts'

function defaultText(value: unknown): string {
  if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) return ''
  return ` (default ${typeof value === 'string' ? value : JSON.stringify(value)})`
}

/** Every field of `schema`, nested sections included. */
function fieldsOf(schema: Schema): Field<unknown>[] {
  const out: Field<unknown>[] = []
  for (const value of Object.values(schema)) {
    const f = value as Field<unknown>
    if (typeof f.parse === 'function' && typeof f.kind === 'string') out.push(f)
    else out.push(...fieldsOf(value as Schema))
  }
  return out
}

function flagFields(schema: Schema): Field<unknown>[] {
  return fieldsOf(schema).filter((f) => f.options.flag)
}

/**
 * Add one option per flag of `schema` to `command`: its doc, environment variable and default
 * in the help; boolean fields take no value, list fields repeat. Values stay text: `schemaFlags`
 * hands them to the kit loader, which parses and checks them with the environment and file.
 *
 * @example addSchemaOptions(program.command('serve'), serveSchema).action((opts) => serve(schemaFlags(opts, serveSchema)))
 */
export function addSchemaOptions(command: Command, schema: Schema): Command {
  for (const f of flagFields(schema)) {
    const o = f.options
    const def = defaultText(o.default)
    const env = o.env ? ` [env ${o.env}${o.secret ? ` or ${o.env}_FILE` : ''}]` : ''
    const option = new Option(
      f.arity === 'none' ? `--${o.flag}` : `--${o.flag} <${f.kind === 'listen' ? 'host:port' : 'value'}>`,
      `${o.doc ?? ''}${def}${env}`.trim(),
    )
    if (f.arity === 'many') option.argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v])
    command.addOption(option)
    // A boolean that defaults to on must be switchable off from the command line:
    // `--flag=false` (runCli rewrites it, see booleanFlagValues) or `--no-flag`.
    if (f.arity === 'none') command.addOption(new Option(`--no-${o.flag}`).hideHelp())
  }
  return command
}

/**
 * Add the settings of `schema` that have no flag (secrets read from the environment or a file,
 * such as a bootstrap password) to a command's `--help`, so every setting is listed somewhere.
 *
 * @example withEnvironmentHelp(program.command('serve'), schema) // "Environment only: NOTIFY_READER_PASSWORD ..."
 */
export function withEnvironmentHelp(command: Command, schema: Schema): Command {
  const lines = fieldsOf(schema)
    .filter((f) => !f.options.flag && f.options.env)
    .map(({ options: o }) => {
      const file = o.secret ? ` (or ${o.env}_FILE, a file holding it)` : ''
      return `  ${o.env}${file}${o.doc ? `: ${o.doc}` : ''}${defaultText(o.default)}`
    })
  return lines.length === 0 ? command : command.addHelpText('after', `\nEnvironment only:\n${lines.join('\n')}`)
}

/** The values of `addSchemaOptions` options that were given, keyed by flag name (for `loadConfig`'s `flags`). */
export function schemaFlags(options: Record<string, unknown>, schema: Schema): Record<string, unknown> {
  const flags: Record<string, unknown> = {}
  for (const f of flagFields(schema)) {
    const name = f.options.flag!
    const key = name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())
    if (options[key] !== undefined) flags[name] = options[key]
  }
  return flags
}
