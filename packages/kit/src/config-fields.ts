/**
 * The field builders of a config schema (`field.string`, `field.duration`, …) and the schema
 * types. The loader that reads flags, environment and files against a schema is config.ts.
 */
import { parseByteSize, parseDuration } from './durations.ts'
import { parseListenAddress } from './net.ts'

export type Source = 'flag' | 'env' | 'file' | 'default'

export interface FieldOptions<T> {
  /** Environment variable name, e.g. `NOTIFY_LISTEN`. */
  env?: string
  /** Flag name without dashes, e.g. `listen` for `--listen` (and `-listen`). */
  flag?: string
  /**
   * Also accept `<VAR>_FILE` / `<key>_file` holding the value; the value is never quoted in an
   * error, and a config file holding it that every user may read is warned about. A function
   * says which values are secret (a database URL with a password, not a `sqlite:` path): the
   * others are quoted and not warned about, and `_FILE` is accepted either way.
   */
  secret?: boolean | ((value: unknown) => boolean)
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

export function isField(x: Field<unknown> | Schema): x is Field<unknown> {
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

export function describe(raw: unknown): string {
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
