/**
 * Identity: OIDC sign-in against the real provider (PKCE, state bound to the browser,
 * nonce, single use), sessions as hashed secrets in HttpOnly Secure cookies, origin-checked
 * mutations, logout; bearer token checks; edge_access assertions against a team key set
 * served here.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { createServer } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { hashToken } from '@gatehouse/kit'
import { freePort, type OidcProvider, startOidcProvider } from '@gatehouse/testkit'
import { exportJWK, type JWK, SignJWT } from 'jose'
import { AUDIENCE, bearer, type Harness, mustPublish, SCOPE, startArtsvc } from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

function cookieOf(res: Response, name: string): string | undefined {
  const line = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`))
  return line
}

describe('oidc mode', () => {
  let op: OidcProvider
  let h: Harness
  before(async () => {
    const port = await freePort()
    op = await startOidcProvider({
      redirectUris: [`http://127.0.0.1:${port}/api/v1/auth/oidc/callback`],
      audience: AUDIENCE,
      scopes: [SCOPE],
      accounts: { olga: { groups: ['artsvc-admins'] } },
    })
    h = await startArtsvc({ op, port })
  })
  after(async () => {
    await h?.close()
    await op?.stop()
  })

  async function login(subject: string, returnTo = '/a/AAAAAAAAAAAAAAAA') {
    const start = await fetch(`${h.base}/api/v1/auth/login?return_to=${encodeURIComponent(returnTo)}`, {
      redirect: 'manual',
    })
    assert.equal(start.status, 302)
    const stateCookie = cookieOf(start, 'artsvc_oidc_state')!
    assert.match(stateCookie, /HttpOnly/i)
    const authUrl = new URL(start.headers.get('location')!)
    assert.equal(authUrl.searchParams.get('code_challenge_method'), 'S256')
    assert.ok(authUrl.searchParams.get('nonce'))
    assert.ok(authUrl.searchParams.get('state'))
    const callback = await op.completeLogin(authUrl.toString(), subject)
    return { callback, stateCookie: stateCookie.split(';')[0]! }
  }

  test('sign-in sets a hashed session in an HttpOnly Secure cookie and returns to the page', async () => {
    const { callback, stateCookie } = await login('olga', '/a/AAAAAAAAAAAAAAAA?version=2')
    const done = await fetch(callback, { redirect: 'manual', headers: { cookie: stateCookie } })
    assert.equal(done.status, 303)
    assert.equal(done.headers.get('location'), '/a/AAAAAAAAAAAAAAAA?version=2')
    const session = cookieOf(done, 'artsvc_session')!
    for (const attr of [/HttpOnly/i, /Secure/i, /SameSite=Lax/i, /Path=\//]) assert.match(session, attr)
    const token = session.split(';')[0]!.split('=')[1]!
    const rows = await h.svc.ctx.database.db.selectFrom('sessions').selectAll().execute()
    assert.ok(rows.some((r) => r.token_hash === hashToken(token)))
    assert.ok(!JSON.stringify(rows).includes(token))
    const me = await fetch(`${h.base}/api/v1/me`, { headers: { cookie: `artsvc_session=${token}` } })
    const body = (await me.json()) as { subject: string; admin: boolean; via: string; groups: string[] }
    assert.deepEqual([body.subject, body.admin, body.via, body.groups], ['olga', true, 'session', ['artsvc-admins']])
    // A replayed callback is refused (state is single use).
    const replay = await fetch(callback, { redirect: 'manual', headers: { cookie: stateCookie } })
    assert.equal(replay.status, 400)
    // Mutations with the cookie need our own Origin.
    const cookie = { cookie: `artsvc_session=${token}`, 'content-type': 'application/json' }
    const body2 = JSON.stringify({ title: 't', entrypoint: 'index.html' })
    const evil = await fetch(`${h.base}/api/v1/artifacts/uploads`, {
      method: 'POST',
      headers: { ...cookie, origin: 'http://evil.example' },
      body: body2,
    })
    assert.equal(evil.status, 403)
    assert.equal(((await evil.json()) as { error: { code: string } }).error.code, 'origin_mismatch')
    const none = await fetch(`${h.base}/api/v1/artifacts/uploads`, { method: 'POST', headers: cookie, body: body2 })
    assert.equal(none.status, 403)
    const ours = await fetch(`${h.base}/api/v1/artifacts/uploads`, {
      method: 'POST',
      headers: { ...cookie, origin: h.base },
      body: body2,
    })
    assert.equal(ours.status, 201)
    // Logout ends the session.
    const out = await fetch(`${h.base}/api/v1/auth/logout`, {
      method: 'POST',
      headers: { cookie: `artsvc_session=${token}`, origin: h.base },
    })
    assert.equal(out.status, 204)
    assert.match(cookieOf(out, 'artsvc_session')!, /Expires=Thu, 01 Jan 1970/)
    assert.equal((await fetch(`${h.base}/api/v1/me`, { headers: { cookie: `artsvc_session=${token}` } })).status, 401)
  })

  test('a callback without the browser-bound state cookie, or with a forged state, is refused', async () => {
    const sessions = async () => (await h.svc.ctx.database.db.selectFrom('sessions').selectAll().execute()).length
    const before = await sessions()
    const { callback, stateCookie } = await login('alice')
    assert.equal((await fetch(callback, { redirect: 'manual' })).status, 400)
    assert.equal(
      (await fetch(callback, { redirect: 'manual', headers: { cookie: 'artsvc_oidc_state=forged' } })).status,
      400,
    )
    const forged = new URL(callback)
    forged.searchParams.set('code', 'not-a-code')
    assert.equal((await fetch(forged, { redirect: 'manual', headers: { cookie: stateCookie } })).status, 400)
    assert.equal(await sessions(), before, 'no session was created')
  })

  test('return_to cannot redirect off-site, and a bad one never fails the sign-in', async () => {
    const cases: Array<[string, string]> = [
      ['//evil.example/x', '/'],
      ['/\t/evil.example', '/'],
      ['/\\evil.example', '/'],
      ['https://evil.example/', '/'],
      ['javascript:alert(1)', '/'],
      ['/a/AAAAAAAAAAAAAAAA\r\nSet-Cookie: x=1', '/a/AAAAAAAAAAAAAAAASet-Cookie:%20x=1'],
      [`${h.base}/a/AAAAAAAAAAAAAAAA?v=1`, '/a/AAAAAAAAAAAAAAAA?v=1'],
    ]
    for (const [returnTo, location] of cases) {
      const { callback, stateCookie } = await login('alice', returnTo)
      const done = await fetch(callback, { redirect: 'manual', headers: { cookie: stateCookie } })
      assert.equal(done.status, 303, JSON.stringify(returnTo))
      assert.equal(done.headers.get('location'), location, JSON.stringify(returnTo))
    }
  })

  test('sessions expire after ARTSVC_SESSION_TTL', async () => {
    const { callback, stateCookie } = await login('alice')
    const done = await fetch(callback, { redirect: 'manual', headers: { cookie: stateCookie } })
    const token = cookieOf(done, 'artsvc_session')!.split(';')[0]!
    await h.svc.ctx.database.db
      .updateTable('sessions')
      .set({ expires_at: Date.now() - 1 })
      .execute()
    assert.equal((await fetch(`${h.base}/api/v1/me`, { headers: { cookie: token } })).status, 401)
  })

  test('bearer tokens: issuer key, audience, scope and lifetime are all checked', async () => {
    const good = await bearer(op, 'alice')
    assert.equal((await fetch(`${h.base}/api/v1/me`, { headers: good })).status, 200)
    const cases: [string, Promise<string>, number, string][] = [
      [
        'wrong audience',
        op.mintAccessToken({ sub: 'alice', scope: SCOPE, audience: 'https://other.test' }),
        401,
        'token_invalid',
      ],
      [
        'expired',
        op.mintAccessToken({ sub: 'alice', scope: SCOPE, audience: AUDIENCE, expiresIn: -120 }),
        401,
        'token_invalid',
      ],
      [
        'missing scope',
        op.mintAccessToken({ sub: 'alice', scope: 'openid', audience: AUDIENCE }),
        403,
        'insufficient_scope',
      ],
      ['garbage', Promise.resolve('abc.def.ghi'), 401, 'token_invalid'],
    ]
    for (const [name, token, status, code] of cases) {
      const res = await fetch(`${h.base}/api/v1/me`, { headers: { authorization: `Bearer ${await token}` } })
      assert.equal(res.status, status, name)
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, code, name)
    }
    // A token signed by another key with the right claims is refused.
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const now = Math.floor(Date.now() / 1000)
    const forged = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', kid: 'x' })
      .setIssuer(op.issuer)
      .setSubject('alice')
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(privateKey)
    assert.equal((await fetch(`${h.base}/api/v1/me`, { headers: { authorization: `Bearer ${forged}` } })).status, 401)
  })

  test('the edge assertion header is ignored in oidc mode', async () => {
    const res = await fetch(`${h.base}/api/v1/me`, { headers: { 'edge-access-jwt-assertion': 'x.y.z' } })
    assert.equal(res.status, 401)
  })
})

describe('edge_access mode', () => {
  let h: Harness
  let op: OidcProvider
  let team: string
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwks = createServer(async (req, res) => {
    if (req.url === '/cdn-cgi/access/certs') {
      const jwk = { ...((await exportJWK(publicKey)) as JWK), kid: 'edge-1', alg: 'ES256', use: 'sig' }
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ keys: [jwk] }))
    } else {
      res.statusCode = 404
      res.end()
    }
  })
  const assertion = (
    claims: Record<string, unknown>,
    options: { aud?: string; iss?: string; exp?: number; key?: typeof privateKey } = {},
  ) => {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'edge-1' })
      .setIssuer(options.iss ?? team)
      .setAudience(options.aud ?? 'aud-tag-123')
      .setIssuedAt(now)
      .setExpirationTime(options.exp ?? now + 300)
      .sign(options.key ?? privateKey)
  }

  before(async () => {
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r))
    team = `http://127.0.0.1:${(jwks.address() as { port: number }).port}`
    op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
    h = await startArtsvc({
      op,
      env: {
        ARTSVC_AUTH_MODE: 'edge_access',
        ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: team,
        ARTSVC_EDGE_ACCESS_AUD: 'aud-tag-123',
        ARTSVC_ADMIN_GROUPS: 'ops-admins',
      },
    })
  })
  after(async () => {
    await h?.close()
    await op?.stop()
    jwks.close()
  })

  test('verified assertions identify edge_access:<sub> users, with groups from custom.groups', async () => {
    const ok = await fetch(`${h.base}/api/v1/me`, {
      headers: {
        'edge-access-jwt-assertion': await assertion({
          sub: 'u-1',
          email: 'u1@example.test',
          custom: { groups: ['ops-admins'] },
        }),
      },
    })
    const me = (await ok.json()) as { subject: string; admin: boolean; via: string }
    assert.deepEqual([ok.status, me.subject, me.admin, me.via], [200, 'edge_access:u-1', true, 'edge'])
    const plain = await fetch(`${h.base}/api/v1/me`, {
      headers: { 'edge-access-jwt-assertion': await assertion({ sub: 'u-2' }) },
    })
    assert.equal(((await plain.json()) as { admin: boolean }).admin, false)
  })

  test('wrong audience, issuer, key or an expired assertion is refused; bare identity headers are not trusted', async () => {
    const { privateKey: other } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    for (const bad of [
      await assertion({ sub: 'u' }, { aud: 'other' }),
      await assertion({ sub: 'u' }, { iss: 'https://evil.example' }),
      await assertion({ sub: 'u' }, { key: other }),
      await assertion({ sub: 'u' }, { exp: Math.floor(Date.now() / 1000) - 600 }),
      'not-a-jwt',
    ]) {
      const res = await fetch(`${h.base}/api/v1/me`, { headers: { 'edge-access-jwt-assertion': bad } })
      assert.equal(res.status, 401)
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'edge_assertion_invalid')
    }
    const spoof = await fetch(`${h.base}/api/v1/me`, {
      headers: { 'x-forwarded-user': 'admin', 'cf-access-authenticated-user-email': 'a@b' },
    })
    assert.equal(spoof.status, 401)
  })

  test('edge users publish and view; sign-in routes are off; mutations are origin-checked', async () => {
    const headers = { 'edge-access-jwt-assertion': await assertion({ sub: 'pub-1' }) }
    const login = await fetch(`${h.base}/api/v1/auth/login`, { headers, redirect: 'manual' })
    assert.equal(login.status, 404)
    const cross = await fetch(`${h.base}/api/v1/artifacts/uploads`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', origin: 'http://evil.example' },
      body: JSON.stringify({ title: 't', entrypoint: 'index.html' }),
    })
    assert.equal(cross.status, 403)
    // Publishing with an edge identity needs the Origin of our own pages (a browser sends it).
    const p = await mustPublish(h, { ...headers, origin: h.base }, sampleBundle())
    const view = await fetch(`${h.base}/a/${p.artifact}`, { headers, redirect: 'manual' })
    assert.equal(view.status, 200)
    assert.equal((await fetch(`${h.base}/a/${p.artifact}`, { redirect: 'manual' })).status, 401)
    // Bearer tokens keep working in edge mode.
    assert.equal((await fetch(`${h.base}/api/v1/me`, { headers: await bearer(op, 'svc') })).status, 200)
  })

  test('the browser UI in edge mode: the assertion signs people in, /admin follows custom.groups', async () => {
    const page = async (path: string, claims?: Record<string, unknown>) => {
      const res = await fetch(`${h.base}${path}`, {
        headers: { accept: 'text/html', ...(claims ? { 'edge-access-jwt-assertion': await assertion(claims) } : {}) },
        redirect: 'manual',
      })
      return { status: res.status, html: await res.text(), csp: res.headers.get('content-security-policy') ?? '' }
    }
    const anonymous = await page('/')
    assert.equal(anonymous.status, 401)
    assert.match(anonymous.html, /Sign in through your access proxy/)
    assert.doesNotMatch(anonymous.html, /auth\/login/, 'no sign-in route in edge mode')
    const library = await page('/', { sub: 'ui-1', email: 'ui1@example.test' })
    assert.equal(library.status, 200)
    assert.match(library.html, /<script type="module" src="\/static\/app\/library.js">/)
    assert.match(library.html, /ui1@example.test/)
    assert.doesNotMatch(library.html, /sign-out/, 'the proxy owns the session: no sign-out button')
    assert.doesNotMatch(library.html, /href="\/admin"/)
    assert.doesNotMatch(library.csp, /unsafe-inline/)
    assert.equal((await page('/admin')).status, 401)
    assert.equal((await page('/admin', { sub: 'ui-1' })).status, 403)
    const admin = await page('/admin', { sub: 'ui-2', custom: { groups: ['ops-admins'] } })
    assert.equal(admin.status, 200)
    assert.match(admin.html, /src="\/static\/app\/admin.js"/)
  })

  test('an unreachable key set or issuer is 503, not a bad credential', async () => {
    const closed = await freePort()
    const other = await startArtsvc({
      op,
      env: {
        ARTSVC_AUTH_MODE: 'edge_access',
        ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: team,
        ARTSVC_EDGE_ACCESS_AUD: 'aud-tag-123',
        ARTSVC_EDGE_ACCESS_JWKS_URL: `http://127.0.0.1:${closed}/certs`,
        ARTSVC_OIDC_ISSUER: `http://127.0.0.1:${closed}`,
      },
    })
    try {
      for (const headers of [
        { 'edge-access-jwt-assertion': await assertion({ sub: 'u' }) },
        { authorization: 'Bearer a.b.c' },
      ] as Record<string, string>[]) {
        const res = await fetch(`${other.base}/api/v1/me`, { headers })
        assert.equal(res.status, 503)
        assert.equal(res.headers.get('retry-after'), '5')
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'identity_provider_unavailable')
      }
    } finally {
      await other.close()
    }
  })
})
