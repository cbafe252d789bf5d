/**
 * Console sign-in and the guard, over real sockets: the console listener asks a session of every
 * API request, a CSRF token and a same-origin Origin of every change; the API listener stays as
 * it was and serves no console pages; links work once; changes are audited as console:<name>.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { ConfigError } from '@gatehouse/kit'
import { loadDnsctlConfig } from '../src/config.ts'
import { ConsoleSessions, MAX_SESSIONS } from '../src/console/sessions.ts'
import { type ConsoleHarness, startConsoleHarness } from './console-helpers.ts'
import { json, startHarness, ZONE, zoneText } from './helpers.ts'

/** GET a path exactly as written (no URL normalisation), with optional headers. */
function raw(base: string, path: string, headers: Record<string, string> = {}) {
  const { hostname, port } = new URL(base)
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    request({ host: hostname, port, path, headers }, (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
      .on('error', reject)
      .end()
  })
}

async function signIn(h: ConsoleHarness, name = 'alice') {
  const url = new URL(await h.link(name))
  const code = url.hash.replace('#code=', '')
  const res = await fetch(`${h.consoleBase}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: h.consoleBase },
    body: JSON.stringify({ code }),
  })
  assert.equal(res.status, 200)
  const cookie = res.headers.get('set-cookie') ?? ''
  const body = await json(res)
  return { code, cookie: cookie.split(';')[0]!, setCookie: cookie, csrf: body.csrf_token as string, body }
}

describe('web console sign-in and guard', () => {
  let h: ConsoleHarness
  before(async () => {
    h = await startConsoleHarness()
    assert.equal((await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText() })).status, 201)
  })
  after(() => h.close())

  test('a link signs in once; the cookie is HttpOnly and SameSite=Strict; the code is in the fragment', async () => {
    const link = await h.link('alice')
    assert.match(link, new RegExp(`^${h.consoleBase}/console/#code=[A-Za-z0-9_-]{43}$`))
    const s = await signIn(h)
    assert.match(s.setCookie, /^dnsctl_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/)
    assert.equal(s.body.name, 'alice')
    const again = await fetch(`${h.consoleBase}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: h.consoleBase },
      body: JSON.stringify({ code: s.code }),
    })
    assert.equal(again.status, 401)
    assert.equal((await json(again)).error.code, 'console_link_invalid')
    const who = await fetch(`${h.consoleBase}/console/session`, { headers: { cookie: s.cookie } })
    assert.equal((await json(who)).csrf_token, s.csrf)
  })

  test('without a session the console listener serves the page only', async () => {
    const page = await fetch(`${h.consoleBase}/console/`)
    assert.equal(page.status, 200)
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/)
    assert.doesNotMatch(page.headers.get('content-security-policy') ?? '', /unsafe-inline/)
    assert.equal((await fetch(`${h.consoleBase}/console/app.js`)).status, 200)
    const root = await fetch(`${h.consoleBase}/`, { redirect: 'manual' })
    assert.equal(root.headers.get('location'), '/console/')
    for (const path of ['/v1/zones', `/v1/zones/${ZONE}/rrsets`, '/console/session', '/metrics', '/openapi.json']) {
      const res = await fetch(h.consoleBase + path)
      assert.equal(res.status, 401, path)
      assert.equal((await json(res)).error.code, 'console_session_required')
    }
    const forged = await fetch(`${h.consoleBase}/v1/zones`, { headers: { cookie: 'dnsctl_console=forged' } })
    assert.equal(forged.status, 401)
    // Other spellings of an API path never pass as a page file (raw paths: fetch would normalise them).
    for (const path of ['/console/../v1/zones', '/console/%2e%2e/v1/zones', '/console//v1/zones', '/CONSOLE/app.js']) {
      const res = await raw(h.consoleBase, path)
      assert.ok(res.status === 401 || res.status === 404, `${path}: ${res.status}`)
      assert.doesNotMatch(res.body, /example\.test/, path)
    }
  })

  test('a change needs the CSRF token and the console origin, and is audited as console:<name>', async () => {
    const s = await signIn(h, 'bob')
    const rrsets = await json(
      await fetch(`${h.consoleBase}/v1/zones/${ZONE}/rrsets`, { headers: { cookie: s.cookie } }),
    )
    const body = JSON.stringify({
      expected_revision: rrsets.revision,
      changes: [{ action: 'upsert', name: 'www', type: 'A', ttl: 300, records: ['192.0.2.20'] }],
    })
    const post = (headers: Record<string, string>) =>
      fetch(`${h.consoleBase}/v1/zones/${ZONE}/changes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: s.cookie, 'x-dns-actor': 'forged-actor', ...headers },
        body,
      })
    const noToken = await post({ origin: h.consoleBase })
    assert.equal(noToken.status, 403)
    assert.equal((await json(noToken)).error.code, 'csrf_token_invalid')
    const wrongToken = await post({ origin: h.consoleBase, 'x-csrf-token': 'x'.repeat(43) })
    assert.equal((await json(wrongToken)).error.code, 'csrf_token_invalid')
    const noOrigin = await post({ 'x-csrf-token': s.csrf })
    assert.equal((await json(noOrigin)).error.code, 'origin_mismatch')
    const otherOrigin = await post({ 'x-csrf-token': s.csrf, origin: 'http://attacker.example' })
    assert.equal(otherOrigin.status, 403)
    assert.equal((await json(otherOrigin)).error.code, 'origin_mismatch')
    const ok = await post({ 'x-csrf-token': s.csrf, origin: h.consoleBase })
    assert.equal(ok.status, 200)
    const audit = await json(await h.call('GET', `/v1/zones/${ZONE}/audit?limit=1`))
    assert.equal(audit.events[0].actor, 'console:bob')
  })

  test('the Host guard covers the console listener (DNS rebinding)', async () => {
    const s = await signIn(h)
    const port = new URL(h.consoleBase).port
    const { status } = await raw(h.consoleBase, '/v1/zones', { host: `rebound.example:${port}`, cookie: s.cookie })
    assert.equal(status, 403)
  })

  test('the API listener serves no console pages, and links are minted only there', async () => {
    assert.equal((await h.call('GET', '/console/')).status, 404)
    assert.equal((await h.call('GET', '/console/app.js')).status, 404)
    assert.equal((await h.call('GET', '/v1/zones')).status, 200)
    const s = await signIn(h)
    const minted = await fetch(`${h.consoleBase}/console/links`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: s.cookie, 'x-csrf-token': s.csrf, origin: h.consoleBase },
      body: '{}',
    })
    assert.equal(minted.status, 404)
  })

  test('sign-out ends the session', async () => {
    const s = await signIn(h)
    const out = await fetch(`${h.consoleBase}/console/session`, {
      method: 'DELETE',
      headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, origin: h.consoleBase },
    })
    assert.equal(out.status, 200)
    assert.match(out.headers.get('set-cookie') ?? '', /Max-Age=0/)
    assert.equal((await fetch(`${h.consoleBase}/v1/zones`, { headers: { cookie: s.cookie } })).status, 401)
  })

  test('bad input: clear 400s, nothing minted or opened', async () => {
    const badName = await h.call('POST', '/console/links', { name: 'a\u0007b' })
    assert.equal(badName.status, 400)
    assert.equal((await json(badName)).error.code, 'invalid_request')
    const extra = await h.call('POST', '/console/links', { name: 'a', admin: true })
    assert.equal(extra.status, 400)
    const noCode = await fetch(`${h.consoleBase}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: h.consoleBase },
      body: '{}',
    })
    assert.equal(noCode.status, 400)
    const crossSite = await fetch(`${h.consoleBase}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://attacker.example' },
      body: JSON.stringify({ code: new URL(await h.link()).hash.slice(6) }),
    })
    assert.equal((await json(crossSite)).error.code, 'origin_mismatch')
  })
})

test('without --console-listen no link is minted (409 console_disabled)', async () => {
  const h = await startHarness()
  try {
    const res = await h.call('POST', '/console/links', {})
    assert.equal(res.status, 409)
    assert.equal((await json(res)).error.code, 'console_disabled')
  } finally {
    await h.close()
  }
})

test('links and sessions expire, and both stores stay bounded', () => {
  let now = 1_000_000
  const sessions = new ConsoleSessions({ sessionTtlMs: 60_000, linkTtlMs: 10_000, now: () => now })
  const late = sessions.mintLink('a')
  now += 10_001
  assert.equal(sessions.redeem(late.code), undefined)
  const opened = sessions.redeem(sessions.mintLink('a').code)
  assert.ok(opened)
  assert.equal(sessions.session(opened.token)?.name, 'a')
  now += 60_001
  assert.equal(sessions.session(opened.token), undefined)
  const tokens = Array.from({ length: MAX_SESSIONS + 5 }, () => sessions.redeem(sessions.mintLink('b').code)!.token)
  assert.equal(sessions.session(tokens[0]), undefined) // the oldest was dropped
  assert.ok(sessions.session(tokens.at(-1)))
})

test('console config: loopback unless acknowledged, a port of its own, an http(s) public URL', () => {
  const load = (argv: string[]) => loadDnsctlConfig(argv, {})
  assert.equal(load([]).console.listen, undefined)
  assert.deepEqual(load(['--console-listen', '127.0.0.1:8057']).console.listen, { host: '127.0.0.1', port: 8057 })
  assert.throws(
    () => load(['--console-listen', '0.0.0.0:8057']),
    (err: unknown) =>
      err instanceof ConfigError && /console\.listen: 0\.0\.0\.0 is not a loopback address/.test(err.message),
  )
  assert.equal(load(['--console-listen', '0.0.0.0:8057', '--allow-non-loopback']).console.listen?.port, 8057)
  assert.throws(
    () => load(['--console-listen', '127.0.0.1:8053']),
    (err: unknown) => err instanceof ConfigError && /needs a port of its own/.test(err.message),
  )
  assert.throws(
    () => load(['--console-public-url', 'ftp://dns.example/']),
    (err: unknown) => err instanceof ConfigError && /must use http or https/.test(err.message),
  )
  const c = load(['--console-session-ttl', '30m', '--console-link-ttl', '2m'])
  assert.equal(c.console.sessionTtl, 30 * 60_000)
  assert.equal(c.console.linkTtl, 2 * 60_000)
})
