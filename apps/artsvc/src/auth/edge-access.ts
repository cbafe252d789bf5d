/**
 * `edge_access` mode: every browser request carries `Edge-Access-Jwt-Assertion`, a JWT
 * from the edge proxy. It is verified against the team key set with the team domain as
 * issuer and the configured audience; the identity is `edge_access:<sub>`, groups come
 * from `custom.groups`. Nothing unverified is ever trusted.
 */
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose'
import { errors } from '../errors.ts'
import { verificationError } from './bearer.ts'
import { groupsFrom } from './principal.ts'

export const EDGE_ASSERTION_HEADER = 'edge-access-jwt-assertion'
export const EDGE_SUBJECT_PREFIX = 'edge_access:'

export class EdgeAccessVerifier {
  readonly #issuer: string
  readonly #audience: string
  readonly #jwks: ReturnType<typeof createRemoteJWKSet>

  constructor(teamDomain: string, audience: string, jwksUrl: string | undefined) {
    this.#issuer = new URL(teamDomain).origin
    this.#audience = audience
    this.#jwks = createRemoteJWKSet(new URL(jwksUrl ?? `${this.#issuer}/cdn-cgi/access/certs`), {
      timeoutDuration: 5000,
    })
  }

  async verify(assertion: string): Promise<{ subject: string; groups: string[]; email?: string | undefined }> {
    let payload: JWTPayload
    try {
      ;({ payload } = await jwtVerify(assertion, this.#jwks, {
        issuer: this.#issuer,
        audience: this.#audience,
        algorithms: ['RS256', 'ES256', 'PS256', 'EdDSA'],
        requiredClaims: ['sub', 'exp'],
      }))
    } catch (err) {
      throw verificationError(err, (why) => errors.edge_assertion_invalid.with({ cause: err }, why))
    }
    const custom = payload.custom as { groups?: unknown } | undefined
    return {
      subject: `${EDGE_SUBJECT_PREFIX}${payload.sub}`,
      groups: groupsFrom(custom?.groups),
      email: typeof payload.email === 'string' ? payload.email : undefined,
    }
  }
}
