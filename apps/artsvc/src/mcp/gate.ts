/**
 * Bearer authentication of the MCP endpoint with the SDK's helper (`verifyBearerToken` and
 * `bearerAuthChallengeResponse`): our verifier checks the JWT with jose against the
 * issuer's JWKS (auth/bearer.ts: cached, refetched on an unknown key id, so the issuer can
 * rotate keys); the SDK enforces the scope and expiry and builds the 401/403 challenge
 * naming the protected-resource metadata (RFC 9728, RFC 6750 section 3).
 */
import { AppError } from '@gatehouse/kit'
import {
  type AuthInfo,
  bearerAuthChallengeResponse,
  OAuthError,
  OAuthErrorCode,
  verifyBearerToken,
} from '@modelcontextprotocol/server'
import type { BearerIdentity, BearerVerifier } from '../auth/bearer.ts'

export type GateResult = { identity: BearerIdentity; authInfo: AuthInfo } | { challenge: Response }

export function mcpGate(bearer: BearerVerifier, scope: string, resourceMetadataUrl: string, resource: string) {
  const options = { requiredScopes: [scope], resourceMetadataUrl }
  return async (authorization: string | undefined): Promise<GateResult> => {
    let identity: BearerIdentity | undefined
    let unavailable: unknown
    const verifier = {
      async verifyAccessToken(token: string): Promise<AuthInfo> {
        try {
          identity = await bearer.identify(token, resource)
        } catch (err) {
          // A bad token is the client's problem (401); an unreachable issuer is ours (503).
          if (err instanceof AppError && err.statusCode === 401)
            throw new OAuthError(OAuthErrorCode.InvalidToken, err.message)
          unavailable = err
          throw err
        }
        return {
          token,
          clientId: identity.clientId ?? identity.subject,
          scopes: identity.scopes,
          expiresAt: identity.expiresAt,
        }
      },
    }
    try {
      const authInfo = await verifyBearerToken(authorization, { verifier, ...options })
      return { identity: identity!, authInfo }
    } catch (err) {
      if (unavailable !== undefined) throw unavailable
      return { challenge: bearerAuthChallengeResponse(err, options) }
    }
  }
}
