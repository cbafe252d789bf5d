/**
 * Small strict checkers for native cards: each failure names the offending path
 * (`card.rows[2].tags[0]`) through the invalid_card error.
 */
import { errors } from '../errors.ts'
import { isSafeUrl } from './draft.ts'

export function fail(path: string, why: string): never {
  throw errors.invalid_card(path, why)
}

export function describe(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  return typeof v === 'object' ? 'an object' : typeof v
}

/** An object with only the allowed keys (and all required ones). */
export function object(v: unknown, path: string, allowed: readonly string[], required: readonly string[] = []) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(path, `must be an object, got ${describe(v)}`)
  const o = v as Record<string, unknown>
  for (const key of Object.keys(o)) {
    if (!allowed.includes(key)) fail(`${path}.${key}`, 'unknown field')
  }
  for (const key of required) if (o[key] === undefined) fail(`${path}.${key}`, 'is required')
  return o
}

export function string(v: unknown, path: string, max: number, min = 0): string {
  if (typeof v !== 'string') fail(path, `must be a string, got ${describe(v)}`)
  if (v.length < min) fail(path, min === 1 ? 'must not be empty' : `must be at least ${min} characters`)
  if (v.length > max) fail(path, `must be at most ${max} characters`)
  return v
}

export function optionalString(v: unknown, path: string, max: number): string | undefined {
  return v === undefined ? undefined : string(v, path, max)
}

export function array(v: unknown, path: string, max: number): unknown[] {
  if (!Array.isArray(v)) fail(path, `must be an array, got ${describe(v)}`)
  if (v.length > max) fail(path, `must have at most ${max} items`)
  return v
}

export function oneOf<const T extends readonly string[]>(v: unknown, path: string, values: T): T[number] {
  if (typeof v !== 'string' || !values.includes(v)) {
    fail(path, `must be one of ${values.map((x) => JSON.stringify(x)).join(', ')}`)
  }
  return v as T[number]
}

export function url(v: unknown, path: string): string {
  const s = string(v, path, 2048, 1)
  if (!isSafeUrl(s)) fail(path, 'must be an absolute http or https URL')
  return s
}

/** A string or finite number, kept as text. */
export function scalarText(v: unknown, path: string, max: number): string {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) fail(path, 'must be a finite number')
    return String(v)
  }
  return string(v, path, max)
}
