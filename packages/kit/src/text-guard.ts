/**
 * Refusal of NUL characters (U+0000) in request text. PostgreSQL cannot store NUL in
 * `text` (error 22021), SQLite truncates it in places, and no sender means it: a NUL in
 * any field is refused as a 400 naming the field, the same on both databases, before
 * anything is stored. `createHttpApp` checks the parsed body, query and path parameters
 * of every request; a route that decodes a body itself (a form `payload=`, a lenient JSON
 * parser) calls `refuseNul` on what it decoded.
 */
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { kitErrors } from './errors.ts'

const MAX_DEPTH = 64

/** The path of the first string (value or key) holding U+0000 in `value`, or undefined. */
export function findNul(value: unknown, path = 'value'): string | undefined {
  const found = walk(value, 0)
  if (found === undefined) return undefined
  // The segments come innermost first; the path is built only when a NUL was found (every
  // request passes through here, and almost none holds one).
  for (let i = found.length - 1; i >= 0; i--) {
    const segment = found[i]!
    path += typeof segment === 'number' ? `[${segment}]` : `.${segment}`
  }
  return path
}

function walk(value: unknown, depth: number): (string | number)[] | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? [] : undefined
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return undefined
  // Raw uploads (Buffer, streams) are bytes, not text: they are checked where they are read.
  if (ArrayBuffer.isView(value) || typeof (value as { pipe?: unknown }).pipe === 'function') return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], depth + 1)
      if (found) {
        found.push(i)
        return found
      }
    }
    return undefined
  }
  for (const key of Object.keys(value)) {
    if (key.includes('\u0000')) return []
    const found = walk((value as Record<string, unknown>)[key], depth + 1)
    if (found) {
      found.push(key)
      return found
    }
  }
  return undefined
}

/**
 * Throw a 400 `invalid_request` when `value` holds a NUL character anywhere.
 *
 * @example refuseNul(JSON.parse(payload), 'payload')
 */
export function refuseNul(value: unknown, where: string): void {
  const path = findNul(value, where)
  if (path !== undefined) {
    throw kitErrors.invalid_request.with({ details: { path } }, `${path} contains a NUL character (U+0000)`)
  }
}

/** JSON bodies parsed from a text that cannot hold a NUL: the guard skips their walk. */
const nulFree = new WeakSet<object>()

/**
 * Check every request's parsed body, query and path parameters (before schema validation),
 * and parse JSON bodies with a fast path in front of Fastify's own parser.
 *
 * JSON can write U+0000 in a string or key only as the escape `\u0000` (a raw control
 * character is a syntax error), and a `__proto__` or `constructor` key, which Fastify's parser
 * refuses, only as those words or with `\u` escapes. So a body text holding no `\u`, `proto`
 * or `constructor` needs neither Fastify's poisoning scan (two regular expressions over the
 * whole text) nor the guard's walk of every string: parsing and guarding edgegate's observation
 * pages took 2.2 µs per observation before and 1.5 µs this way (docs/performance/edgegate.md).
 * Any other text, and any text `JSON.parse` refuses, goes to Fastify's parser as before (same
 * value, same errors); the guard walks what it returns.
 */
export function installNulGuard(app: FastifyInstance): void {
  const fastifyParser = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    const bytes = body as Buffer
    // Bytes that are not UTF-8 would decode to U+FFFD: refuse them rather than store the
    // replacement (a zone's text, a message). simdutf's check costs about 1 % of the parse.
    if (!isUtf8(bytes)) return done(kitErrors.invalid_json('the body is not UTF-8'), undefined)
    const text = bytes.toString('utf8')
    if (text.includes('\\u') || text.includes('proto') || text.includes('constructor'))
      return fastifyParser(req, text, done)
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      // Empty, invalid, or led by a byte-order mark (which Fastify's parser skips).
      return fastifyParser(req, text, done)
    }
    if (value !== null && typeof value === 'object') nulFree.add(value)
    done(null, value)
  })
  app.addHook('preValidation', async (req: FastifyRequest) => {
    refuseNul(req.params, 'params')
    refuseNul(req.query, 'query')
    if (req.body === null || typeof req.body !== 'object' || !nulFree.has(req.body)) refuseNul(req.body, 'body')
  })
}
