/**
 * Strict configuration: command-line flags > environment > JSON file > defaults.
 *
 * A schema is a plain object of fields (and nested sections, for the JSON file). Every
 * violation is collected and reported at once, one line per key, through `ConfigError`;
 * `runMain` prints those lines without a stack trace. Secret fields also accept
 * `<VAR>_FILE` in the environment and `<key>_file` in the JSON file.
 */
import {
  type ConfigOf,
  describe,
  type Field,
  type FieldOptions,
  isField,
  type Schema,
  type Source,
} from './config-fields.ts'
import { StartupError } from './errors.ts'
import { readFileSync, statSync } from './startup-builtins.ts'

export { type ConfigOf, type Field, type FieldOptions, field, type Schema } from './config-fields.ts'

/** All configuration violations, one line each (`key: what is wrong`). */
export class ConfigError extends StartupError {
  override readonly name = 'ConfigError'
  /**
   * Set by `loadConfig` when some settings were bad: what did load, so an app's cross-field
   * rules can still run on the good ones and the operator sees every problem at once
   * (`loadWithChecks`). Undefined when the config file could not be read or parsed, since
   * nothing is then known about the settings it holds.
   */
  readonly partial: PartialLoad | undefined
  constructor(lines: string | string[], options?: { cause?: unknown; partial?: PartialLoad }) {
    super(lines, options?.cause === undefined ? undefined : { cause: options.cause })
    this.partial = options?.partial
  }
}

/** What `loadConfig` loaded beside its errors (`ConfigError.partial`). */
export interface PartialLoad {
  /**
   * The settings that loaded; a setting in `invalid`, or a required one that is missing, is
   * undefined here whatever the schema's type says.
   */
  loaded: Loaded<Schema>
  /** Dotted paths of settings that were given but cannot be used (a bad value, an unreadable secret file). */
  invalid: ReadonlySet<string>
}

export interface LoadOptions {
  /** Raw command-line arguments (flags before positionals; `--` ends flags). */
  argv?: string[]
  /** Or flags already parsed by a CLI library, keyed by flag name. */
  flags?: Record<string, unknown>
  env?: Record<string, string | undefined>
  /** Path of the JSON config file. */
  file?: string
  /** When false, a missing file is the same as an empty one. Default true. */
  fileRequired?: boolean
  /**
   * False for a command that reads no config file at all (a client command set by flags and
   * the environment): a required setting's error then offers only its flag and variable.
   */
  configFile?: boolean
  /**
   * Ignore keys of the file this schema does not know. For commands that read only part of a
   * program's config file (an admin CLI reading the server's file for `database`); the server
   * itself still rejects unknown keys.
   */
  ignoreUnknownFileKeys?: boolean
  /**
   * When false, secrets named by file (`*_FILE`, `"<key>_file"`) are not read: their value is
   * `SECRET_NOT_READ`. For commands that never use them (`status`), so a file only the service's
   * user may read, or one not deployed on this host, does not stop them.
   */
  readSecretFiles?: boolean
}

/** The value of a secret whose file was not read (`readSecretFiles: false`). */
export const SECRET_NOT_READ = '(secret file not read)'

export interface Loaded<S extends Schema> {
  config: ConfigOf<S>
  /** The config file read (`options.file`), to name it in later checks; undefined without one. */
  file: string | undefined
  /** Arguments left after the flags. */
  positionals: string[]
  /** Where each leaf value came from, keyed by dotted path (for `doctor` commands). */
  sources: Record<string, Source>
  /**
   * How each setting given was written, keyed by dotted path, as the loader's own errors name
   * it: `--listen`, `APP_TOKEN`, `APP_TOKEN_FILE`, `token_file` or the path in the file. Also
   * for a setting given with a bad value; a default has none. Cross-field rules name settings
   * with it, so that a rule and the loader name one setting one way.
   */
  labels: Record<string, string>
  /**
   * Problems that do not stop the program, for its log: a secret in a file every user of the
   * host may read (`secretExposure`).
   */
  warnings: string[]
}

interface Leaf {
  path: string
  field: Field<unknown>
}

function leaves(schema: Schema, prefix = ''): Leaf[] {
  const out: Leaf[] = []
  for (const [key, value] of Object.entries(schema)) {
    const path = prefix ? `${prefix}.${key}` : key
    if (isField(value)) out.push({ path, field: value })
    else out.push(...leaves(value, path))
  }
  return out
}

/** Parse `--name value`, `--name=value`, `-name value` and boolean `--name` against the schema's flags. */
function parseArgv(argv: string[], byFlag: Map<string, Leaf>, errors: string[]) {
  const flags = new Map<string, unknown>()
  const positionals: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1))
      break
    }
    if (!arg.startsWith('-') || arg === '-' || positionals.length > 0) {
      positionals.push(arg)
      continue
    }
    const body = arg.replace(/^--?/, '')
    const eq = body.indexOf('=')
    const name = eq === -1 ? body : body.slice(0, eq)
    const leaf = byFlag.get(name)
    if (!leaf) {
      errors.push(`flag --${name}: unknown flag`)
      continue
    }
    let value: unknown
    if (eq !== -1) value = body.slice(eq + 1)
    else if (leaf.field.arity === 'none') value = true
    else if (i + 1 < argv.length) value = argv[++i]
    else {
      errors.push(`flag --${name}: needs a value`)
      continue
    }
    if (leaf.field.arity === 'many') {
      const prev = (flags.get(name) as unknown[] | undefined) ?? []
      flags.set(name, [...prev, value])
    } else flags.set(name, value)
  }
  return { flags, positionals }
}

function readJsonFile(path: string, required: boolean, errors: string[]): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' && !required) return {}
    errors.push(`config file ${path}: cannot be read (${code ?? (err as Error).message})`)
    return {}
  }
  try {
    const parsed = JSON.parse(text)
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      errors.push(`config file ${path}: must hold a JSON object`)
      return {}
    }
    return parsed
  } catch (err) {
    errors.push(`config file ${path}: invalid JSON (${(err as Error).message})`)
    return {}
  }
}

/**
 * A warning when `path`, which holds a secret, may be read by every user of the host (the
 * "others" read bit: a file written under the usual umask 022). On a shared host (an SSH
 * bastion's users, a web server's other sites) anyone could then take the token and act as
 * this program. Group read is left alone: `640` with the service's group is the usual setup.
 */
export function secretExposure(path: string, holds: string): string | undefined {
  let mode: number
  try {
    mode = statSync(path).mode
  } catch {
    return undefined
  }
  if ((mode & 0o004) === 0) return undefined
  const octal = (mode & 0o777).toString(8).padStart(4, '0')
  return `${path} holds ${holds} and every user of this host can read it (mode ${octal}); chmod o-r ${path}`
}

function readSecretFile(path: string, what: string, errors: string[], warnings: string[]): string | undefined {
  try {
    const text = readFileSync(path, 'utf8').replace(/\r?\n$/, '')
    const exposed = secretExposure(path, `a secret (${what})`)
    if (exposed) warnings.push(exposed)
    return text
  } catch (err) {
    errors.push(
      `${what}: secret file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    )
    return undefined
  }
}

/** Walk the JSON file against the schema, reporting unknown keys; returns dotted path -> value. */
function flattenFile(
  obj: Record<string, unknown>,
  schema: Schema,
  prefix: string,
  out: Map<string, unknown>,
  errors: string[],
  ignoreUnknown = false,
) {
  for (const [key, value] of Object.entries(obj)) {
    const path = prefix ? `${prefix}.${key}` : key
    const spec = schema[key]
    if (spec === undefined) {
      const secretKey = key.endsWith('_file') ? key.slice(0, -5) : undefined
      const secret = secretKey === undefined ? undefined : schema[secretKey]
      if (secret && isField(secret) && secret.options.secret) {
        out.set(`${prefix ? `${prefix}.` : ''}${secretKey}#file`, value)
        continue
      }
      if (!ignoreUnknown) errors.push(`${path}: unknown key`)
      continue
    }
    if (isField(spec)) out.set(path, value)
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      flattenFile(value as Record<string, unknown>, spec, path, out, errors, ignoreUnknown)
    } else errors.push(`${path}: must be an object, got ${describe(value)}`)
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown) {
  const parts = path.split('.')
  let node = target
  for (const p of parts.slice(0, -1)) {
    node[p] ??= {}
    node = node[p] as Record<string, unknown>
  }
  node[parts.at(-1)!] = value
}

/**
 * Load and validate configuration. Throws `ConfigError` listing every violation.
 *
 * @example
 * const schema = { listen: field.string({ env: 'APP_LISTEN', flag: 'listen', default: '127.0.0.1:8080' }) }
 * const { config } = loadConfig(schema, { argv: process.argv.slice(2), env: process.env })
 */
export function loadConfig<S extends Schema>(schema: S, options: LoadOptions = {}): Loaded<S> {
  const errors: string[] = []
  const all = leaves(schema)
  const byFlag = new Map<string, Leaf>()
  for (const leaf of all) if (leaf.field.options.flag) byFlag.set(leaf.field.options.flag, leaf)

  let flags = new Map<string, unknown>()
  let positionals: string[] = []
  if (options.argv) ({ flags, positionals } = parseArgv(options.argv, byFlag, errors))
  if (options.flags) {
    for (const [name, value] of Object.entries(options.flags)) {
      if (value === undefined) continue
      if (!byFlag.has(name)) errors.push(`flag --${name}: unknown flag`)
      else flags.set(name, value)
    }
  }
  const env = options.env ?? {}
  const fileValues = new Map<string, unknown>()
  // A file that cannot be read or parsed is the one problem to report: the settings it would
  // have given are not also "required".
  let fileFailed = false
  if (options.file !== undefined) {
    const before = errors.length
    const json = readJsonFile(options.file, options.fileRequired ?? true, errors)
    fileFailed = errors.length > before
    flattenFile(json, schema, '', fileValues, errors, options.ignoreUnknownFileKeys)
  }

  const config: Record<string, unknown> = {}
  const sources: Record<string, Source> = {}
  const labels: Record<string, string> = {}
  const warnings: string[] = []
  const invalid = new Set<string>()
  // Secrets written in the file itself, whichever source wins: the file holds them either way.
  const inlineSecrets = all
    .filter((l) => fileValues.has(l.path) && isSecretValue(l.field.options, fileValues.get(l.path)))
    .map((l) => l.path)
  for (const { path, field: f } of all) {
    const o = f.options
    const name = o.flag && flags.has(o.flag) ? `--${o.flag}` : undefined
    let raw: unknown
    let source: Source | undefined
    let label = path
    if (name) {
      raw = flags.get(o.flag!)
      source = 'flag'
      label = name
    } else if (o.env && env[o.env] !== undefined) {
      raw = env[o.env]
      source = 'env'
      label = o.env
      if (o.secret && env[`${o.env}_FILE`] !== undefined) {
        errors.push(`${o.env}: set either ${o.env} or ${o.env}_FILE, not both`)
        invalid.add(path)
        labels[path] = label
        continue
      }
    } else if (o.secret && o.env && env[`${o.env}_FILE`] !== undefined) {
      label = `${o.env}_FILE`
      raw =
        options.readSecretFiles === false
          ? SECRET_NOT_READ
          : readSecretFile(env[`${o.env}_FILE`]!, label, errors, warnings)
      if (raw === undefined) {
        invalid.add(path)
        labels[path] = label
        continue
      }
      source = 'env'
    } else if (fileValues.has(path)) {
      raw = fileValues.get(path)
      source = 'file'
    } else if (fileValues.has(`${path}#file`)) {
      label = `${path}_file`
      const p = fileValues.get(`${path}#file`)
      if (typeof p !== 'string') {
        errors.push(`${label}: must be a file path string`)
        invalid.add(path)
        labels[path] = label
        continue
      }
      raw = options.readSecretFiles === false ? SECRET_NOT_READ : readSecretFile(p, label, errors, warnings)
      if (raw === undefined) {
        invalid.add(path)
        labels[path] = label
        continue
      }
      source = 'file'
    } else if (o.default !== undefined) {
      raw = o.default
      source = 'default'
    }
    if (source !== undefined && source !== 'default') labels[path] = label
    if (source === undefined) {
      if (o.required && !fileFailed) {
        const ways = [
          o.flag && `--${o.flag}`,
          o.env,
          o.secret && o.env && `${o.env}_FILE`,
          options.configFile !== false && `"${path}" in the config file`,
        ]
        errors.push(`${path}: required (set ${ways.filter(Boolean).join(' or ')})`)
      } else setPath(config, path, undefined)
      continue
    }
    try {
      // Defaults given in their typed form are used as they are.
      const value = source === 'default' && typeof raw !== 'string' ? raw : f.parse(raw, source)
      setPath(config, path, value)
      sources[path] = source
    } catch (err) {
      invalid.add(path)
      // A custom field with several problems (a list of entries) names each on its own line.
      const lines = err instanceof ConfigError ? err.lines : [(err as Error).message]
      // A field's message may quote the value ("got …"): never a secret's, which reaches logs.
      const shown = isSecretValue(o, raw) ? lines.map((line) => hideValue(line, raw)) : lines
      // A custom field with several problems (a list of entries) names each on its own line.
      for (const line of shown) errors.push(/^[[.]/.test(line) ? `${label}${line}` : `${label}: ${line}`)
    }
  }
  if (inlineSecrets.length > 0) {
    const exposed = secretExposure(options.file!, `a secret (${inlineSecrets.join(', ')})`)
    if (exposed) warnings.push(exposed)
  }
  const loaded = { config: config as ConfigOf<S>, file: options.file, positionals, sources, labels, warnings }
  if (errors.length > 0) throw new ConfigError(errors, fileFailed ? {} : { partial: { loaded, invalid } })
  return loaded
}

/** Whether `value` of a field is secret: every value of a `secret: true` field, or as its function says. */
function isSecretValue(o: FieldOptions<unknown>, value: unknown): boolean {
  return typeof o.secret === 'function' ? o.secret(value) : o.secret === true
}

/** A message about a secret's value without the value, however the field quoted it. */
function hideValue(line: string, raw: unknown): string {
  if (typeof raw !== 'string' && typeof raw !== 'number') return line
  // Fields quote a value as JSON (`got "…"`), whole or trimmed.
  const quoted = [JSON.stringify(raw), ...(typeof raw === 'string' ? [JSON.stringify(raw.trim())] : [])]
  return quoted.reduce((text, q) => text.replaceAll(q, '(the value, not shown)'), line)
}

/**
 * Load, then run the app's cross-field rules (`check`, which throws `ConfigError`) also when
 * some settings were bad, and throw one `ConfigError` with both sets of lines, the per-field
 * ones first. `check` gets the settings that loaded and the paths of those that did not (see
 * `PartialLoad`): a rule that reads a setting in `invalid` must skip itself, a rule that only
 * asks whether a setting was given may count it as given. A file that could not be read or
 * parsed is reported alone.
 *
 * @example
 * const config = loadWithChecks(
 *   () => loadConfig(schema, { env: process.env }),
 *   ({ config }, invalid) => finish(config, invalid),
 * )
 */
export function loadWithChecks<S extends Schema, T>(
  load: () => Loaded<S>,
  check: (loaded: Loaded<S>, invalid: ReadonlySet<string>) => T,
): T {
  let loaded: Loaded<S>
  let invalid: ReadonlySet<string> = new Set()
  let fieldErrors: ConfigError | undefined
  try {
    loaded = load()
  } catch (err) {
    if (!(err instanceof ConfigError) || err.partial === undefined) throw err
    fieldErrors = err
    loaded = err.partial.loaded as Loaded<S>
    invalid = err.partial.invalid
  }
  let result: T
  try {
    result = check(loaded, invalid)
  } catch (err) {
    if (fieldErrors === undefined || !(err instanceof ConfigError)) throw err
    throw new ConfigError([...fieldErrors.lines, ...err.lines], { partial: { loaded, invalid } })
  }
  if (fieldErrors) throw fieldErrors
  return result
}

/**
 * A setting named in a cross-field rule's message the way it was given, as the loader's own
 * errors name it: `--listen`, `NOTIFY_READER_PASSWORD_FILE`, `listen (in /etc/gatehouse/x.json)`.
 * One not given is named by its variable, else its flag, else its path: how to give it.
 *
 * @example settingName(schema, loaded, 'publicUrl') // 'NOTIFY_PUBLIC_URL' when not given
 */
export function settingName(
  schema: Schema,
  origin: Partial<Pick<Loaded<Schema>, 'labels' | 'sources' | 'file'>>,
  path: string,
): string {
  const label = origin.labels?.[path]
  if (label !== undefined) {
    return origin.sources?.[path] === 'file' ? `${label} (in ${origin.file ?? 'the config file'})` : label
  }
  const o = leaves(schema).find((l) => l.path === path)?.field.options
  if (o === undefined) throw new TypeError(`settingName: no setting ${path} in the schema`)
  return o.env ?? (o.flag ? `--${o.flag}` : path)
}

/** Lines describing every field (flag, env, default, doc), for `--help` output. */
export function describeSchema(schema: Schema): string[] {
  return leaves(schema).map(({ path, field: f }) => {
    const o = f.options
    const names = [o.flag && `--${o.flag}`, o.env && `$${o.env}${o.secret ? ` / $${o.env}_FILE` : ''}`, path]
    const def =
      o.default === undefined
        ? ''
        : ` (default ${typeof o.default === 'string' ? o.default : JSON.stringify(o.default)})`
    return `  ${names.filter(Boolean).join(', ')}${def}${o.doc ? `\n      ${o.doc}` : ''}`
  })
}
