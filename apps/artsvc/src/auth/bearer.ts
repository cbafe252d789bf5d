/**
 * OAuth bearer access tokens from the OIDC issuer (API, CLI and service accounts): a JWT
 * signed by a key of the issuer's JWKS, with the configured audience and scope.
 */
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose'
import { errors } from '../errors.ts'
import type { IssuerMetadata } from './issuer.ts'

export interface BearerIdentity {
  subject: string
  groups: unknown
  name?: string | undefined
  email?: string | undefined
  /** The token's scopes (`scope` or `scp`). */
  scopes: string[]
  /** Expiry, seconds since the epoch. */
  expiresAt: number
  clientId?: string | undefined
}

/**
 * The issuer's key set is cached. A token naming an unknown key id (the issuer rotated)
 * refetches it, at most once per `cooldownDuration` so forged key ids cannot turn into a
 * request flood; a retired key stops verifying when the cache ages out (`cacheMaxAge`).
 */
export const JWKS_CACHE = { timeoutDuration: 5000, cooldownDuration: 2000, cacheMaxAge: 300_000 }

export class BearerVerifier {
  readonly #issuer: IssuerMetadata
  readonly #audience: string | undefined
  readonly #scope: string
  #jwks: ReturnType<typeof createRemoteJWKSet> | undefined

  constructor(issuer: IssuerMetadata, audience: string | undefined, scope: string) {
    this.#issuer = issuer
    this.#audience = audience
    this.#scope = scope
  }

  /** Signature, issuer, audience and lifetime, and the configured scope: REST and the CLI. */
  async verify(token: string): Promise<BearerIdentity> {
    const id = await this.identify(token)
    if (!id.scopes.includes(this.#scope)) throw errors.insufficient_scope(this.#scope)
    return id
  }

  /**
   * Signature, issuer, audience and lifetime only; the scope is the caller's check (the MCP
   * endpoint lets the SDK's bearer helper answer a missing scope with its challenge).
   * `resource` is one more accepted audience: the MCP endpoint's own URL, which its
   * protected-resource metadata names and spec-following clients ask the issuer for (RFC 8707).
   */
  async identify(token: string, resource?: string): Promise<BearerIdentity> {
    if (!this.#audience) throw errors.token_invalid('bearer tokens are not enabled (ARTSVC_OAUTH_AUDIENCE is not set)')
    const meta = await this.#issuer.get().catch((err) => {
      throw errors.identity_provider_unavailable.with({ cause: err })
    })
    this.#jwks ??= createRemoteJWKSet(new URL(meta.jwks_uri), JWKS_CACHE)
    let payload: JWTPayload
    try {
      ;({ payload } = await jwtVerify(token, this.#jwks, {
        issuer: meta.issuer,
        audience: resource === undefined ? this.#audience : [this.#audience, resource],
        algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
        requiredClaims: ['sub', 'exp'],
      }))
    } catch (err) {
      throw verificationError(err, (why) => errors.token_invalid.with({ cause: err }, why))
    }
    const scopes =
      typeof payload.scope === 'string' ? payload.scope.split(' ') : Array.isArray(payload.scp) ? payload.scp : []
    return {
      subject: payload.sub!,
      scopes: scopes.filter((x): x is string => typeof x === 'string'),
      expiresAt: payload.exp!,
      clientId: typeof payload.client_id === 'string' ? payload.client_id : undefined,
      groups: payload.groups,
      name: typeof payload.name === 'string' ? payload.name : undefined,
      email: typeof payload.email === 'string' ? payload.email : undefined,
    }
  }
}

/** jose's own errors mean a bad token; anything else (network, timeout) means we could not check it. */
export function verificationError(err: unknown, bad: (why: string) => Error): Error {
  const code = (err as { code?: string }).code
  if (code === 'ERR_JWKS_TIMEOUT' || !code?.startsWith('ERR_J'))
    return errors.identity_provider_unavailable.with({ cause: err })
  return bad(code)
}
