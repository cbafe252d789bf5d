/**
 * Resolve the caller of a management-origin request:
 *
 * 1. `Authorization: Bearer <jwt>` — an OAuth access token from the OIDC issuer;
 * 2. in `edge_access` mode, the verified `Edge-Access-Jwt-Assertion` header;
 * 3. in `oidc` mode, the browser session cookie.
 *
 * Bad credentials are refused (401), never ignored; no credentials give `undefined`.
 */
import { bearerToken } from '@gatehouse/kit/credentials.ts'
import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { ArtsvcConfig } from '../config.ts'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import type { BearerIdentity, BearerVerifier } from './bearer.ts'
import { EDGE_ASSERTION_HEADER, type EdgeAccessVerifier } from './edge-access.ts'
import { groupsFrom, isAdminIdentity, type Principal } from './principal.ts'
import { findSession, SESSION_COOKIE } from './sessions.ts'
import { findUserBySubject, upsertUser } from './users.ts'

/** `X-Gateway-OAuth-Subject` (lower-case, as Node presents headers). */
export const DELEGATION_HEADER = 'x-gateway-oauth-subject'

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

  /**
   * The principal of a verified bearer token. With `X-Gateway-OAuth-Subject`, only the
   * token whose subject is exactly ARTSVC_GATEWAY_OAUTH_SUBJECT may act for an existing
   * user (fail closed: anyone else sending the header, or an unknown user, is refused).
   * A delegated user is an administrator only by subject: the gateway's groups are not theirs.
   */
  async bearerPrincipal(id: BearerIdentity, delegated: string | string[] | undefined): Promise<Principal> {
    const now = this.#now()
    const gatewaySubject = this.#config.gatewayOauthSubject
    if (delegated === undefined) {
      const user = await upsertUser(this.#db, id.subject, id, now)
      const groups = groupsFrom(id.groups)
      return { user, groups, isAdmin: this.#admin(user.oidc_subject, groups), via: 'bearer' }
    }
    if (gatewaySubject === undefined || id.subject !== gatewaySubject || typeof delegated !== 'string')
      throw errors.delegation_refused()
    const subject = delegated.trim()
    const user = subject === '' ? undefined : await findUserBySubject(this.#db, subject)
    if (!user || user.oidc_subject === gatewaySubject) throw errors.delegated_user_unknown()
    const gateway = await upsertUser(this.#db, id.subject, id, now)
    return { user, groups: [], isAdmin: this.#admin(user.oidc_subject, []), via: 'bearer', gateway }
  }

  #admin(subject: string, groups: string[]): boolean {
    return isAdminIdentity(subject, groups, this.#config.adminSubjects, this.#config.adminGroups)
  }

  async #resolve(req: FastifyRequest): Promise<Principal | undefined> {
    const now = this.#now()
    const auth = req.headers.authorization
    if (auth !== undefined && /^bearer\b/i.test(auth.trimStart())) {
      if (!this.#bearer) throw errors.token_invalid('bearer tokens are not enabled')
      const token = bearerToken(auth)
      if (!token) throw errors.token_invalid('the Authorization header is not a well-formed bearer token')
      const id = await this.#bearer.verify(token)
      return this.bearerPrincipal(id, req.headers[DELEGATION_HEADER])
    }
    // Delegation rides only on the gateway's bearer token: with any other credential it is refused.
    if (req.headers[DELEGATION_HEADER] !== undefined) throw errors.delegation_refused()
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
