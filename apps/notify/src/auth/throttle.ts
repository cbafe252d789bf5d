/**
 * Sign-in throttling (policy in README.md, "Sign-in throttling"): two fixed windows, one per
 * client address (checked before the body is read; an IPv6 client counted per /64, which it
 * holds all of) and one per user name (checked once the body names it, case-insensitively).
 * Each counts the attempts of a window of `loginThrottleWindow` that starts with the first
 * attempt; past the limit the answer is 429 `login_throttled` with `Retry-After`, without
 * checking the password, until the window ends (further attempts do not extend it). An
 * attacker can so hold an account for at most one window after stopping, and gets a bounded
 * number of guesses per window while attacking.
 *
 * The counts live in the database (`login_attempts`, one upsert per attempt and key), so the
 * limits hold across every notify process on it: with counters per process, N nodes would
 * give an attacker N times the guesses. A database that cannot count (down, read-only) fails
 * the attempt with 503 before the password is checked: a sign-in needs a session written
 * anyway, and a password checked without being counted would be an unthrottled oracle (401
 * against 503). Keys past their limit are also remembered in the process until their window
 * ends, so a flood from one address costs no writes once it is refused.
 */
import { createHash } from 'node:crypto'
import { parseIp } from '@gatehouse/kit'
import { sql } from '@gatehouse/kit/db/database.ts'
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { Config } from '../config.ts'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'

export interface LoginThrottle {
  /** onRequest hook: the client address's attempts. */
  byAddress(req: FastifyRequest): Promise<void>
  /** preHandler hook: the named account's attempts. */
  byAccount(req: FastifyRequest): Promise<void>
}

/** Refused keys remembered in the process; past this many, the ended windows are dropped. */
const REMEMBERED = 10_000

/** The stored key: hashed, as a password typed into the name field must not be kept. */
function storedKey(kind: 'account' | 'address', value: string): string {
  return createHash('sha256').update(`${kind}:${value}`).digest('base64url')
}

/** The address an attempt counts against: itself, or for IPv6 its /64. */
function throttledAddress(ip: string): string {
  let addr: ReturnType<typeof parseIp>
  try {
    addr = parseIp(ip)
  } catch {
    return ip
  }
  if (addr.kind() === 'ipv4') return addr.toString()
  return `${Buffer.from(addr.toByteArray().slice(0, 8)).toString('hex')}/64`
}

export function loginThrottle(db: Kysely<DB>, config: Config): LoginThrottle {
  const windowMs = config.loginThrottleWindow
  const refused = new Map<string, number>()

  const refuse = (endMs: number, now: number) => {
    const seconds = Math.max(1, Math.ceil((endMs - now) / 1000))
    return errors.login_throttled.with({ headers: { 'retry-after': String(seconds) } }, seconds)
  }

  const remember = (key: string, endMs: number, now: number) => {
    if (refused.size >= REMEMBERED) {
      for (const [k, end] of refused) if (end <= now) refused.delete(k)
      // Only a shortcut: the database still counts whatever is forgotten here.
      if (refused.size >= REMEMBERED) refused.clear()
    }
    refused.set(key, endMs)
  }

  const attempt = async (key: string, max: number) => {
    const now = Date.now()
    const held = refused.get(key)
    if (held !== undefined) {
      if (held > now) throw refuse(held, now)
      refused.delete(key)
    }
    const at = new Date(now).toISOString()
    const end = new Date(now + windowMs).toISOString()
    // A window that has ended starts again at this attempt; one statement, so parallel
    // attempts on any process each get their own count.
    const { rows } = await sql<{ attempts: number; window_end: string }>`
      insert into login_attempts (key, attempts, window_end) values (${key}, 1, ${end})
      on conflict (key) do update set
        attempts = case when login_attempts.window_end <= ${at} then 1 else login_attempts.attempts + 1 end,
        window_end = case when login_attempts.window_end <= ${at} then excluded.window_end else login_attempts.window_end end
      returning attempts, window_end`.execute(db)
    const row = rows[0]!
    if (Number(row.attempts) <= max) return
    const endMs = Date.parse(row.window_end)
    remember(key, endMs, now)
    throw refuse(endMs, now)
  }

  return {
    byAddress: (req) => attempt(storedKey('address', throttledAddress(req.ip)), config.loginAttemptsPerAddress),
    byAccount: (req) => {
      const body = req.body as { username?: unknown } | undefined
      const name = typeof body?.username === 'string' ? body.username.toLowerCase() : ''
      return attempt(storedKey('account', name), config.loginAttemptsPerAccount)
    },
  }
}
