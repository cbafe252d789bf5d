/**
 * Who is asking: the signed-in reader (session cookie), or in loopback development mode
 * (no reader password configured, loopback Host only: see server.ts) the built-in `local`
 * administrator. Also the browser checks: mutations carrying a session cookie must come from the public origin and host;
 * X-Forwarded-* headers are never consulted.
 */
import { bearerToken } from '@gatehouse/kit/credentials.ts'
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { Config } from '../config.ts'
import type { DB, UserRow } from '../db/schema.ts'
import { DESKTOP_SESSION_PREFIX } from '../desktop/service.ts'
import { errors } from '../errors.ts'
import { userForReaderToken } from '../tokens/credentials.ts'
import { readCookie, renewedExpiry, renewSession, SESSION_COOKIE, userForSession } from './sessions.ts'

export interface Reader {
  id: string
  username: string
  isAdmin: boolean
  /**
   * When the credential this request came with stops working (ms since the epoch): a
   * session's or an expiring reader token's expiry; absent when it never does. A realtime
   * stream ends then (realtime/routes.ts), as it ends when the credential is revoked.
   */
  expiresAt?: number
}

/** The identity every request acts as in development mode. */
export const LOCAL_READER_NAME = 'local'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the `signedIn` / `admin` route hooks. */
    reader: Reader | null
  }
}

/** The reader a `signedIn` or `admin` hook attached to the request. */
export function readerOf(req: FastifyRequest): Reader {
  if (!req.reader) throw new TypeError('route is missing its signedIn/admin hook')
  return req.reader
}

export interface Guard {
  /** onRequest hook: any signed-in reader (401 otherwise); runs before body validation. */
  signedIn(req: FastifyRequest): Promise<void>
  /** onRequest hook: an administrator (401/403 otherwise). */
  admin(req: FastifyRequest): Promise<void>
  /**
   * The reader behind the request, or undefined. A session it comes with is renewed when due,
   * unless `renew` is false (a stream checking its credential again is not a use).
   */
  reader(req: FastifyRequest, renew?: boolean): Promise<Reader | undefined>
  /** The reader, or 401. */
  requireReader(req: FastifyRequest): Promise<Reader>
  /** An installation administrator, or 401/403. */
  requireAdmin(req: FastifyRequest): Promise<Reader>
  /** onRequest hook: origin and host rules. */
  checkOrigin(req: FastifyRequest): void
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function toReader(user: UserRow, credentialExpiresAt: string | null = null): Reader {
  const reader: Reader = { id: user.id, username: user.username, isAdmin: user.is_admin === 1 }
  if (credentialExpiresAt !== null) reader.expiresAt = Date.parse(credentialExpiresAt)
  return reader
}

export function createGuard(config: Config, db: Kysely<DB>, localReader: Reader | undefined): Guard {
  const publicHost = config.publicUrl ? new URL(config.publicUrl).host : undefined

  // After a renewal that failed (a database turned read-only), none is tried for a minute: every
  // request would otherwise attempt the write, and each refused one costs the pool a connection.
  let renewalPausedUntil = 0

  /** The session's reader, its end moved forward when due (a failed write refuses nothing). */
  async function sessionReader(token: string, renew: boolean): Promise<Reader | undefined> {
    const user = await userForSession(db, token)
    if (!user) return undefined
    const now = Date.now()
    const renewed =
      renew && now >= renewalPausedUntil
        ? renewedExpiry(user.credential_expires_at, user.session_renew_until, config.sessionTtl, now)
        : undefined
    if (renewed === undefined) return toReader(user, user.credential_expires_at)
    try {
      await renewSession(db, token, renewed)
    } catch {
      renewalPausedUntil = Date.now() + 60_000
      return toReader(user, user.credential_expires_at)
    }
    return toReader(user, renewed)
  }

  async function reader(req: FastifyRequest, renew = true): Promise<Reader | undefined> {
    if (!config.auth) return localReader
    const token = readCookie(req.headers.cookie, SESSION_COOKIE)
    if (token === undefined) {
      // A script's reader API token (tokens/) or a desktop app's session (desktop/): no
      // cookie, so checkOrigin asks for no Origin.
      const presented = bearerToken(req.headers.authorization)
      const bearer = presented && /^(?:ntr|nts)_/.test(presented) && presented.length <= 204 ? presented : undefined
      if (bearer?.startsWith(DESKTOP_SESSION_PREFIX))
        return sessionReader(bearer.slice(DESKTOP_SESSION_PREFIX.length), renew)
      const user = bearer ? await userForReaderToken(db, bearer) : undefined
      return user ? toReader(user, user.credential_expires_at) : undefined
    }
    if (token.length > 200) return undefined
    return sessionReader(token, renew)
  }

  async function requireReader(req: FastifyRequest): Promise<Reader> {
    const r = await reader(req)
    if (!r) throw errors.session_required()
    return r
  }

  async function requireAdmin(req: FastifyRequest): Promise<Reader> {
    const r = await requireReader(req)
    if (!r.isAdmin) throw errors.admin_required()
    return r
  }

  return {
    reader,
    requireReader,
    requireAdmin,
    async signedIn(req) {
      req.reader = await requireReader(req)
    },
    async admin(req) {
      req.reader = await requireAdmin(req)
    },
    checkOrigin(req) {
      const host = req.headers.host ?? ''
      const origin = req.headers.origin
      if (!config.auth) {
        // Unauthenticated mode: the kit's Host guard (server.ts) already refused any Host that
        // is not loopback (DNS rebinding); refuse cross-origin browser writes here.
        if (!SAFE_METHODS.has(req.method) && origin !== undefined && origin !== `http://${host}`) {
          throw errors.origin_mismatch()
        }
        return
      }
      if (SAFE_METHODS.has(req.method)) return
      const path = req.url.split('?')[0]
      const hasSession = readCookie(req.headers.cookie, SESSION_COOKIE) !== undefined
      const isLogin = path === '/api/v1/auth/login'
      if (!hasSession && !isLogin) return
      if (host !== publicHost) throw errors.origin_mismatch()
      // A browser always sends Origin on a cross-site or non-GET fetch; a session-carrying
      // mutation without it is refused. Sign-in from a non-browser client may omit it.
      if (origin === undefined ? hasSession : origin !== config.publicOrigin) throw errors.origin_mismatch()
    },
  }
}
