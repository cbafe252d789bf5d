/**
 * Strict configuration: command-line flags > environment > JSON file > defaults.
 *
 * A schema is a plain object of fields (and nested sections, for the JSON file). Every
 * violation is collected and reported at once, one line per key, through `ConfigError`;
 * `runMain` prints those lines without a stack trace. Secret fields also accept
 * `<VAR>_FILE` in the environment and `<key>_file` in the JSON file.
 */
import { readFileSync } from 'node:fs'
import { parseByteSize, parseDuration } from './durations.ts'
import { StartupError } from './errors.ts'
import { parseListenAddress } from './net.ts'

type Source = 'flag' | 'env' | 'file' | 'default'

export interface FieldOptions<T> {
  /** Environment variable name, e.g. `NOTIFY_LISTEN`. */
  env?: string
  /** Flag name without dashes, e.g. `listen` for `--listen` (and `-listen`). */
  flag?: string
  /** Also accept `<VAR>_FILE` / `<key>_file` holding the value. */
  secret?: boolean
  required?: boolean
  default?: T | string
  /** One line for `--help` and the README. */
  doc?: string
}

export interface Field<T> {
  readonly kind: string
  readonly options: FieldOptions<unknown>
  /** Boolean flags take no value; list flags may repeat. */
  readonly arity: 'none' | 'one' | 'many'
  /** Turn a raw value (string from flag/env, JSON value from the file) into T, or throw an Error whose message says why. */
  parse(raw: unknown, source: Source): T
}

export interface Schema {
  readonly [key: string]: Field<unknown> | Schema
}

export type ConfigOf<S extends Schema> = {
  -readonly [K in keyof S]: S[K] extends Field<infer T> ? T : S[K] extends Schema ? ConfigOf<S[K]> : never
}

type ListItem<O> = O extends { item: (s: string) => infer T } ? T : string

type Out<T, O> = O extends { default: unknown } ? T : O extends { required: true } ? T : T | undefined

function isField(x: Field<unknown> | Schema): x is Field<unknown> {
  return typeof (x as Field<unknown>).parse === 'function' && typeof (x as Field<unknown>).kind === 'string'
}

function make<T>(
  kind: string,
  options: FieldOptions<unknown>,
  parse: (raw: unknown, source: Source) => T,
  arity: Field<T>['arity'] = 'one',
): Field<T> {
  if (options.env !== undefined && !/^[A-Z][A-Z0-9_]*$/.test(options.env)) {
    throw new TypeError(`config: env name ${options.env} must be UPPER_SNAKE_CASE`)
  }
  return { kind, options, parse, arity }
}

function asString(raw: unknown): string {
  if (typeof raw === 'string') return raw
  if (typeof raw === 'number' || typeof raw === 'bigint') return String(raw)
  throw new Error(`must be a string, got ${describe(raw)}`)
}

function describe(raw: unknown): string {
  if (raw === null) return 'null'
  if (Array.isArray(raw)) return 'an array'
  return typeof raw === 'object' ? 'an object' : `${typeof raw} ${JSON.stringify(raw)}`
}

interface StringOptions<T> extends FieldOptions<T> {
  pattern?: RegExp
  /** Says what the pattern means, e.g. "a host:port address". */
  patternDoc?: string
  minLength?: number
}

interface NumberOptions extends FieldOptions<number> {
  min?: number
  max?: number
}

/** Field builders. Each returns `T | undefined` unless a default is given or `required: true`. */
export const field = {
  string<const O extends StringOptions<string>>(options: O = {} as O): Field<Out<string, O>> {
    return make('string', options, (raw) => {
      const s = asString(raw)
      if (options.minLength !== undefined && s.length < options.minLength) {
        throw new Error(`must be at least ${options.minLength} characters`)
      }
      if (options.pattern && !options.pattern.test(s)) {
        throw new Error(`must be ${options.patternDoc ?? `of the form ${options.pattern}`}, got ${JSON.stringify(s)}`)
      }
      return s
    }) as Field<Out<string, O>>
  },

  /**
   * A listen address (`host:port`, `[v6]:port`, `:port` for every interface), checked with
   * `parseListenAddress` and kept as text; split it with `parseListenAddress` when listening.
   */
  listen<const O extends FieldOptions<string>>(options: O = {} as O): Field<Out<string, O>> {
    return make('listen', options, (raw) => {
      const s = asString(raw).trim()
      parseListenAddress(s)
      return s
    }) as Field<Out<string, O>>
  },

  int<const O extends NumberOptions>(options: O = {} as O): Field<Out<number, O>> {
    return make('int', options, (raw) => {
      const n =
        typeof raw === 'number' ? raw : /^-?\d+$/.test(asString(raw).trim()) ? Number(asString(raw).trim()) : Number.NaN
      if (!Number.isSafeInteger(n)) throw new Error(`must be an integer, got ${describe(raw)}`)
      checkRange(n, options)
      return n
    }) as Field<Out<number, O>>
  },

  number<const O extends NumberOptions>(options: O = {} as O): Field<Out<number, O>> {
    return make('number', options, (raw) => {
      const n = typeof raw === 'number' ? raw : asString(raw).trim() === '' ? Number.NaN : Number(asString(raw))
      if (!Number.isFinite(n)) throw new Error(`must be a number, got ${describe(raw)}`)
      checkRange(n, options)
      return n
    }) as Field<Out<number, O>>
  },

  boolean<const O extends FieldOptions<boolean>>(options: O = {} as O): Field<Out<boolean, O>> {
    return make(
      'boolean',
      options,
      (raw) => {
        if (typeof raw === 'boolean') return raw
        const s = asString(raw).trim().toLowerCase()
        if (['1', 'true', 'yes', 'on'].includes(s)) return true
        if (['0', 'false', 'no', 'off'].includes(s)) return false
        throw new Error(`must be true or false, got ${JSON.stringify(raw)}`)
      },
      'none',
    ) as Field<Out<boolean, O>>
  },

  /** Milliseconds, written `500ms`, `30s`, `1h30m`; JSON numbers are not accepted (units are required). */
  duration<const O extends FieldOptions<number> & { min?: string; max?: string }>(
    options: O = {} as O,
  ): Field<Out<number, O>> {
    const min = options.min === undefined ? undefined : parseDuration(options.min)
    const max = options.max === undefined ? undefined : parseDuration(options.max)
    return make('duration', options, (raw) => {
      if (typeof raw === 'number') throw new Error('must be a duration string with a unit, e.g. "30s"')
      const ms = parseDuration(asString(raw))
      if (min !== undefined && ms < min) throw new Error(`must be at least ${options.min}`)
      if (max !== undefined && ms > max) throw new Error(`must be at most ${options.max}`)
      return ms
    }) as Field<Out<number, O>>
  },

  /** Bytes: an integer or `512KiB`, `25MiB`, `1GB`. */
  bytes<const O extends NumberOptions>(options: O = {} as O): Field<Out<number, O>> {
    return make('bytes', options, (raw) => {
      const n = typeof raw === 'number' && Number.isSafeInteger(raw) ? raw : parseByteSize(asString(raw))
      checkRange(n, options)
      return n
    }) as Field<Out<number, O>>
  },

  enum<const V extends readonly string[], const O extends FieldOptions<V[number]>>(
    values: V,
    options: O = {} as O,
  ): Field<Out<V[number], O>> {
    return make('enum', options, (raw) => {
      const s = asString(raw)
      if (!values.includes(s)) throw new Error(`must be one of ${values.join(', ')}, got ${JSON.stringify(s)}`)
      return s
    }) as Field<Out<V[number], O>>
  },

  /** A URL whose scheme is one of `protocols` (e.g. `['https:']`). */
  url<const O extends FieldOptions<string> & { protocols?: string[] }>(options: O = {} as O): Field<Out<string, O>> {
    return make('url', options, (raw) => {
      const s = asString(raw)
      let u: URL
      try {
        u = new URL(s)
      } catch {
        throw new Error(`must be an absolute URL, got ${JSON.stringify(s)}`)
      }
      if (options.protocols && !options.protocols.includes(u.protocol)) {
        throw new Error(
          `must use ${options.protocols.map((p) => p.replace(':', '')).join(' or ')}, got ${u.protocol.replace(':', '')}`,
        )
      }
      return s
    }) as Field<Out<string, O>>
  },

  /**
   * A list: repeated flags, a comma-separated env value, or a JSON array of strings.
   * `item` validates and converts each element.
   */
  list<const O extends FieldOptions<unknown[]> & { item?: (s: string) => unknown }>(
    options: O = {} as O,
  ): Field<Out<ListItem<O>[], O>> {
    const item = options.item ?? ((s: string) => s)
    return make(
      'list',
      options,
      (raw, source) => {
        let parts: string[]
        if (Array.isArray(raw)) {
          parts = raw.map((x, i) => {
            if (typeof x !== 'string') throw new Error(`element ${i} must be a string, got ${describe(x)}`)
            return x
          })
        } else if (source === 'file') {
          throw new Error(`must be an array of strings, got ${describe(raw)}`)
        } else {
          const s = asString(raw).trim()
          parts = s === '' ? [] : s.split(',').map((x) => x.trim())
        }
        return parts.map((p, i) => {
          try {
            return item(p)
          } catch (err) {
            throw new Error(`element ${i} ${JSON.stringify(p)}: ${(err as Error).message}`)
          }
        })
      },
      'many',
    ) as Field<Out<ListItem<O>[], O>>
  },

  /** Any custom conversion; `parse` throws an Error whose message says what is wrong. */
  custom<T, const O extends FieldOptions<T>>(parse: (raw: unknown) => T, options: O = {} as O): Field<Out<T, O>> {
    return make('custom', options, (raw) => parse(raw)) as Field<Out<T, O>>
  },
}

function checkRange(n: number, options: { min?: number; max?: number }) {
  if (options.min !== undefined && n < options.min) throw new Error(`must be at least ${options.min}, got ${n}`)
  if (options.max !== undefined && n > options.max) throw new Error(`must be at most ${options.max}, got ${n}`)
}

/** All configuration violations, one line each (`key: what is wrong`). */
export class ConfigError extends StartupError {
  override readonly name = 'ConfigError'
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
   * Ignore keys of the file this schema does not know. For commands that read only part of a
   * program's config file (an admin CLI reading the server's file for `database`); the server
   * itself still rejects unknown keys.
   */
  ignoreUnknownFileKeys?: boolean
}

export interface Loaded<S extends Schema> {
  config: ConfigOf<S>
  /** Arguments left after the flags. */
  positionals: string[]
  /** Where each leaf value came from, keyed by dotted path (for `doctor` commands). */
  sources: Record<string, Source>
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

function readSecretFile(path: string, what: string, errors: string[]): string | undefined {
  try {
    return readFileSync(path, 'utf8').replace(/\r?\n$/, '')
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
  if (options.file !== undefined) {
    const json = readJsonFile(options.file, options.fileRequired ?? true, errors)
    flattenFile(json, schema, '', fileValues, errors, options.ignoreUnknownFileKeys)
  }

  const config: Record<string, unknown> = {}
  const sources: Record<string, Source> = {}
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
        continue
      }
    } else if (o.secret && o.env && env[`${o.env}_FILE`] !== undefined) {
      label = `${o.env}_FILE`
      raw = readSecretFile(env[`${o.env}_FILE`]!, label, errors)
      if (raw === undefined) continue
      source = 'env'
    } else if (fileValues.has(path)) {
      raw = fileValues.get(path)
      source = 'file'
    } else if (fileValues.has(`${path}#file`)) {
      label = `${path}_file`
      const p = fileValues.get(`${path}#file`)
      if (typeof p !== 'string') {
        errors.push(`${label}: must be a file path string`)
        continue
      }
      raw = readSecretFile(p, label, errors)
      if (raw === undefined) continue
      source = 'file'
    } else if (o.default !== undefined) {
      raw = o.default
      source = 'default'
    }
    if (source === undefined) {
      if (o.required) {
        const ways = [
          o.flag && `--${o.flag}`,
          o.env,
          o.secret && o.env && `${o.env}_FILE`,
          `"${path}" in the config file`,
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
      errors.push(`${label}: ${(err as Error).message}`)
    }
  }
  if (errors.length > 0) throw new ConfigError(errors)
  return { config: config as ConfigOf<S>, positionals, sources }
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
