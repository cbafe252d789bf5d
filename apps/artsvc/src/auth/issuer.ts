/**
 * The OIDC issuer's discovery document, fetched once and kept (a failed fetch is retried
 * on the next request). Plain HTTP issuers are only accepted on loopback (config checks).
 */
import * as client from 'openid-client'

export interface IssuerMetadata {
  /** The discovered openid-client configuration (with the client credentials when given). */
  configuration(): Promise<client.Configuration>
  get(): Promise<{ issuer: string; jwks_uri: string }>
}

export function issuerMetadata(
  issuer: string,
  clientId: string | undefined,
  clientSecret: string | undefined,
): IssuerMetadata {
  let pending: Promise<client.Configuration> | undefined
  const configuration = () => {
    pending ??= client
      .discovery(new URL(issuer), clientId ?? 'artsvc', clientSecret, undefined, {
        ...(new URL(issuer).protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : {}),
        timeout: 10,
      })
      .catch((err) => {
        pending = undefined
        throw err
      })
    return pending
  }
  // Every bearer request asks for these two fields; serverMetadata() deep-copies the whole
  // document each time (a profile showed it), so keep them once the discovery succeeded.
  let known: { issuer: string; jwks_uri: string } | undefined
  return {
    configuration,
    async get() {
      if (known) return known
      const meta = (await configuration()).serverMetadata()
      if (!meta.jwks_uri) throw new Error('the issuer publishes no jwks_uri')
      known = { issuer: meta.issuer, jwks_uri: meta.jwks_uri }
      return known
    },
  }
}
