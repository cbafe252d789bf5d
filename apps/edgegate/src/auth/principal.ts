/**
 * Who is calling: a gate node (bearer token or verified client certificate), an
 * administrator (bearer token or dashboard session cookie), or nobody.
 */
import { createHash } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import { hashToken } from '@gatehouse/kit'
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { findAdminByTokenHash, findSession, LAST_USED_GRANULARITY_MS, recordAdminUse } from '../admins/store.ts'
import type { AdminRow, DB, NodeRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { findByCertFingerprint, findByCertNames, findByTokenHash } from '../nodes/store.ts'
import { bearerFrom, cookieFrom } from './tokens.ts'

export const SESSION_COOKIE = 'edgegate_session'

export type Principal =
  | { type: 'node'; node: NodeRow; via: 'token' }
  | { type: 'node'; node: NodeRow; via: 'certificate'; certExpiresMs: number }
  | { type: 'admin'; name: string; via: 'token' | 'session'; tokenExpiresMs: number | null }

/** Resolve the caller; throws 401 for presented-but-invalid credentials, returns undefined for none. */
export async function resolvePrincipal(db: Kysely<DB>, req: FastifyRequest): Promise<Principal | undefined> {
  const bearer = bearerFrom(req.headers.authorization)
  if (bearer === null) throw errors.unauthorized('the Authorization header must be "Bearer <token>"')
  if (bearer !== undefined) {
    const hash = hashToken(bearer)
    const node = await findByTokenHash(db, hash)
    if (node) return { type: 'node', node, via: 'token' }
    const admin = await findAdminByTokenHash(db, hash)
    if (admin) {
      refuseExpired(admin, Date.now())
      await noteAdminUse(db, admin)
      return { type: 'admin', name: admin.name, via: 'token', tokenExpiresMs: expiryOf(admin.expires_ms) }
    }
    throw errors.unauthorized('unknown token')
  }
  const session = cookieFrom(req.headers.cookie, SESSION_COOKIE)
  if (session !== undefined) {
    const found = /^[A-Za-z0-9_-]{16,200}$/.test(session)
      ? await findSession(db, hashToken(session), Date.now())
      : undefined
    if (found)
      return { type: 'admin', name: found.admin_name, via: 'session', tokenExpiresMs: expiryOf(found.token_expires_ms) }
    // A stale cookie is not an error by itself: the caller may still present a certificate.
  }
  const fromCert = await nodeFromCertificate(db, req)
  if (fromCert) return { type: 'node', node: fromCert.node, via: 'certificate', certExpiresMs: fromCert.expiresMs }
  if (session !== undefined) throw errors.unauthorized('the session has expired; sign in again')
  return undefined
}

/** A stored expiry (PostgreSQL gives a bigint as text). */
function expiryOf(stored: number | string | null): number | null {
  return stored === null ? null : Number(stored)
}

/** 401 for an administrator token past its expiry, saying so: "unknown token" would send its holder looking for a typo. */
export function refuseExpired(admin: AdminRow, now: number): void {
  if (admin.expires_ms !== null && Number(admin.expires_ms) <= now) {
    throw errors.unauthorized(
      `the administrator token of ${admin.name} expired at ${new Date(Number(admin.expires_ms)).toISOString()}; an operator can issue a new one with edgegate admin rotate-token`,
    )
  }
}

/** When this server last tried to record each administrator's use, per database handle. */
const useAttempts = new WeakMap<Kysely<DB>, Map<string, number>>()

/**
 * `edgegate admin list` shows when each token was last presented, to the minute: the row just
 * read tells whether it is due, so most calls write nothing. A failure to record it (a
 * read-only disk, where reads go on) must not refuse the request it came with, and is not tried
 * again within the minute: on a PostgreSQL turned read-only each refused write also costs the
 * pool a connection, and the row, never updated, would say every call is due.
 */
export async function noteAdminUse(db: Kysely<DB>, admin: AdminRow): Promise<void> {
  const now = Date.now()
  const since = now - LAST_USED_GRANULARITY_MS
  if (admin.last_used_ms !== null && Number(admin.last_used_ms) >= since) return
  let attempts = useAttempts.get(db)
  if (attempts === undefined) {
    attempts = new Map()
    useAttempts.set(db, attempts)
  }
  if ((attempts.get(admin.name) ?? 0) >= since) return
  attempts.set(admin.name, now)
  await recordAdminUse(db, admin.name, now).catch(() => undefined)
}

/** A verified client certificate a request presented: its SHA-256 (DER), its CN and DNS names, its expiry. */
export interface PresentedCertificate {
  fingerprint: string
  names: string[]
  expiresMs: number
}

/** The client certificate of the request's TLS connection, when the client CA verified it. */
export function presentedCertificate(req: FastifyRequest): PresentedCertificate | undefined {
  const socket = req.raw.socket as TLSSocket
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) return undefined
  const cert = socket.getPeerCertificate()
  if (!cert?.raw) return undefined
  const names = new Set<string>()
  const cn = cert.subject?.CN
  if (typeof cn === 'string') names.add(cn)
  for (const part of (cert.subjectaltname ?? '').split(',')) {
    const m = /^\s*DNS:(.+)$/.exec(part)
    if (m) names.add(m[1]!.trim())
  }
  return {
    fingerprint: createHash('sha256').update(cert.raw).digest('hex'),
    names: [...names],
    expiresMs: Date.parse(cert.valid_to),
  }
}

/**
 * Whether `node` is the node a certificate authenticates, given how many nodes pin its
 * fingerprint and how many (up to two) claim one of its names: the node pinning the
 * fingerprint, else the only node claiming a name (nodeFromCertificate's rule, for a read
 * that found the node and those counts in one statement).
 */
export function isCertificateNode(
  node: NodeRow,
  cert: PresentedCertificate,
  claims: { byFingerprint: number; byName: number },
): boolean {
  if (claims.byFingerprint > 0) return node.cert_fingerprint === cert.fingerprint
  return claims.byName === 1 && node.cert_name !== null && cert.names.includes(node.cert_name)
}

async function nodeFromCertificate(
  db: Kysely<DB>,
  req: FastifyRequest,
): Promise<{ node: NodeRow; expiresMs: number } | undefined> {
  const cert = presentedCertificate(req)
  if (!cert) return undefined
  const { expiresMs } = cert
  const byFingerprint = await findByCertFingerprint(db, cert.fingerprint)
  if (byFingerprint) return { node: byFingerprint, expiresMs }
  const matches = await findByCertNames(db, cert.names)
  // Two nodes claiming one certificate name is a registry mistake: fail closed.
  if (matches.length !== 1) {
    if (matches.length > 1) throw errors.unauthorized('the client certificate matches more than one node')
    throw errors.unauthorized('the client certificate is not registered to a node')
  }
  return { node: matches[0]!, expiresMs }
}
