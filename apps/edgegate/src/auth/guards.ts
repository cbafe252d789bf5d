/**
 * Route guards (Fastify onRequest hooks): they run before body validation, so a caller
 * without the right to an endpoint learns nothing about its payload rules.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { DB, NodeKind, NodeRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { updateNode } from '../nodes/store.ts'
import { type Principal, resolvePrincipal } from './principal.ts'

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The authenticated node of a request that passed `requireNode`. */
export function nodeOf(req: FastifyRequest): NodeRow {
  if (req.principal?.type !== 'node') throw new TypeError('route is missing its requireNode guard')
  return req.principal.node
}

/** The administrator of a request that passed `requireAdmin`. */
export function adminOf(req: FastifyRequest): string {
  if (req.principal?.type !== 'admin') throw new TypeError('route is missing its requireAdmin guard')
  return req.principal.name
}

export function makeGuards(db: Kysely<DB>) {
  // Last-seen times are written at most once a minute per node, with the expiry of the client
  // certificate it presented (so `node list` and the health pass see every node's certificate).
  const touched = new Map<string, number>()
  const touch = (p: Principal & { type: 'node' }) => {
    const now = Date.now()
    const { node } = p
    if ((touched.get(node.instance_id) ?? 0) > now - 60_000) return
    touched.set(node.instance_id, now)
    const cert =
      p.via === 'certificate' && Number.isFinite(p.certExpiresMs) && Number(node.cert_expires_ms) !== p.certExpiresMs
        ? { cert_expires_ms: p.certExpiresMs }
        : {}
    updateNode(db, node.instance_id, { last_seen_ms: now, ...cert }).catch(() => {})
  }

  /** Admit a node found by its credential: active, of one of `kinds`, its own instance in `?instance_id=`. */
  function admitNode(req: FastifyRequest, p: Principal & { type: 'node' }, kinds: readonly NodeKind[]): void {
    if (p.node.active !== 1) throw errors.node_inactive()
    if (!kinds.includes(p.node.kind))
      throw errors.wrong_node_kind.with({ details: { kind: p.node.kind } }, p.node.instance_id, p.node.kind, kinds)
    const q = (req.query as Record<string, unknown>).instance_id
    if (typeof q === 'string' && q !== p.node.instance_id) throw errors.instance_mismatch()
    req.principal = p
    touch(p)
  }

  /** Gate nodes of these kinds, active, whose own instance is in `?instance_id=`. */
  function requireNode(kinds: readonly NodeKind[]) {
    return async (req: FastifyRequest, _reply: FastifyReply) => {
      const p = await resolvePrincipal(db, req)
      if (!p) throw errors.unauthorized()
      if (p.type !== 'node') throw errors.node_required()
      admitNode(req, p, kinds)
    }
  }

  /** Administrators; a session-cookie mutation must come from this dashboard's own origin. */
  async function requireAdmin(req: FastifyRequest, _reply: FastifyReply) {
    const p = await resolvePrincipal(db, req)
    if (!p) throw errors.unauthorized()
    if (p.type !== 'admin') throw errors.admin_required()
    if (p.via === 'session' && !SAFE_METHODS.has(req.method)) checkOrigin(req)
    req.principal = p
  }

  return { requireNode, admitNode, requireAdmin }
}

/** Cookie-authenticated writes need `Origin` equal to `https://<Host>` (CSRF defence beside SameSite=Strict). */
export function checkOrigin(req: FastifyRequest): void {
  const origin = req.headers.origin
  const host = req.headers.host
  if (!origin || !host || origin !== `https://${host}`) throw errors.origin_mismatch()
}
