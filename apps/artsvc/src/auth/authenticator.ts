/**
 * Resolve the caller of a management-origin request:
 *
 * 1. `Authorization: Bearer <jwt>` — an OAuth access token from the OIDC issuer;
 * 2. in `edge_access` mode, the verified `Edge-Access-Jwt-Assertion` header;
 * 3. in `oidc` mode, the browser session cookie.
 *
 * Bad credentials are refused (401), never ignored; no credentials give `undefined`.
 */
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { ArtsvcConfig } from '../config.ts'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import type { BearerVerifier } from './bearer.ts'
import { EDGE_ASSERTION_HEADER, type EdgeAccessVerifier } from './edge-access.ts'
import { groupsFrom, isAdminIdentity, type Principal } from './principal.ts'
import { findSession, SESSION_COOKIE } from './sessions.ts'
import { upsertUser } from './users.ts'

declare module 'fastify' {
  interface FastifyRequest {
    principalPromise?: Promise<Principal | undefined>
  }
}

export class Authenticator {
  readonly #config: ArtsvcConfig
  readonly #db: Kysely<DB>
  readonly #bearer: BearerVerifier | undefined
  readonly #edge: EdgeAccessVerifier | undefined
  readonly #now: () => number

  constructor(
    config: ArtsvcConfig,
    db: Kysely<DB>,
    bearer: BearerVerifier | undefined,
    edge: EdgeAccessVerifier | undefined,
    now: () => number,
  ) {
    this.#config = config
    this.#db = db
    this.#bearer = bearer
    this.#edge = edge
    this.#now = now
  }

  /** The caller, or undefined when no credentials were sent (memoised per request). */
  principal(req: FastifyRequest): Promise<Principal | undefined> {
    req.principalPromise ??= this.#resolve(req)
    return req.principalPromise
  }

  /** The caller, or 401. */
  async require(req: FastifyRequest): Promise<Principal> {
    const p = await this.principal(req)
    if (!p) throw errors.authentication_required()
    return p
  }

  async requireAdmin(req: FastifyRequest): Promise<Principal> {
    const p = await this.require(req)
    if (!p.isAdmin) throw errors.admin_required()
    return p
  }

  #admin(subject: string, groups: string[]): boolean {
    return isAdminIdentity(subject, groups, this.#config.adminSubjects, this.#config.adminGroups)
  }

  async #resolve(req: FastifyRequest): Promise<Principal | undefined> {
    const now = this.#now()
    const auth = req.headers.authorization
    if (auth !== undefined && /^bearer\s/i.test(auth)) {
      if (!this.#bearer) throw errors.token_invalid('bearer tokens are not enabled')
      const id = await this.#bearer.verify(auth.slice(7).trim())
      const user = await upsertUser(this.#db, id.subject, id, now)
      const groups = groupsFrom(id.groups)
      return { user, groups, isAdmin: this.#admin(user.oidc_subject, groups), via: 'bearer' }
    }
    if (this.#config.authMode === 'edge_access') {
      const assertion = req.headers[EDGE_ASSERTION_HEADER]
      if (typeof assertion !== 'string' || assertion === '') return undefined
      const id = await this.#edge!.verify(assertion)
      const user = await upsertUser(this.#db, id.subject, { email: id.email }, now)
      return { user, groups: id.groups, isAdmin: this.#admin(user.oidc_subject, id.groups), via: 'edge' }
    }
    const token = req.cookies?.[SESSION_COOKIE]
    if (!token) return undefined
    const session = await findSession(this.#db, token, now)
    if (!session) return undefined
    return {
      user: session.user,
      groups: session.groups,
      isAdmin: this.#admin(session.user.oidc_subject, session.groups),
      via: 'session',
    }
  }
}
