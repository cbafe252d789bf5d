import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose'
import { startOidcProvider } from '../src/index.ts'

test('startOidcProvider: discovery, client credentials, minted tokens, automatic login, stop', async () => {
  const redirect = 'http://127.0.0.1:9/callback'
  const op = await startOidcProvider({ redirectUris: [redirect], audience: 'https://api.test', scopes: ['api:use'] })
  try {
    const discovery = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as Record<
      string,
      string
    >
    assert.equal(discovery.issuer, op.issuer)
    assert.equal(discovery.jwks_uri, op.jwksUri)
    const jwks = createRemoteJWKSet(new URL(op.jwksUri))

    const issued = await op.clientCredentialsToken()
    const verified = await jwtVerify(issued, jwks, { issuer: op.issuer, audience: 'https://api.test', typ: 'at+jwt' })
    assert.equal(verified.payload.scope, 'api:use')
    assert.equal(verified.protectedHeader.alg, 'RS256')

    const minted = await op.mintAccessToken({ sub: 'bob', scope: 'api:use', claims: { groups: ['ops'] } })
    const m = await jwtVerify(minted, jwks, { issuer: op.issuer, audience: 'https://api.test', typ: 'at+jwt' })
    assert.equal(m.payload.sub, 'bob')
    assert.deepEqual(m.payload.groups, ['ops'])

    // A full authorization-code login with PKCE, completed without a person.
    const verifier = randomBytes(32).toString('base64url')
    const challenge = createHash('sha256').update(verifier).digest('base64url')
    const auth = new URL(discovery.authorization_endpoint!)
    for (const [k, v] of Object.entries({
      client_id: op.clientId,
      redirect_uri: redirect,
      response_type: 'code',
      scope: 'openid profile',
      state: 'st4te',
      nonce: 'n0nce',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }))
      auth.searchParams.set(k, v)
    const back = new URL(await op.completeLogin(auth.toString(), 'carol'))
    assert.equal(`${back.origin}${back.pathname}`, redirect)
    assert.equal(back.searchParams.get('state'), 'st4te')
    const tokenRes = await fetch(discovery.token_endpoint!, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${op.clientId}:${op.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: back.searchParams.get('code')!,
        redirect_uri: redirect,
        code_verifier: verifier,
      }),
    })
    const tokens = (await tokenRes.json()) as { id_token: string }
    assert.equal(tokenRes.status, 200)
    const idToken = decodeJwt(tokens.id_token)
    assert.equal(idToken.sub, 'carol')
    assert.equal(idToken.nonce, 'n0nce')
  } finally {
    await op.stop()
  }
  await assert.rejects(fetch(`${op.issuer}/jwks`))
})
