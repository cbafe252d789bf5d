/**
 * The dashboard in Chromium: sign in with an administrator token, see an observed
 * fingerprint with its evidence, approve it, see it change; session cookies are refused
 * for writes from another origin.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Dashboard, LAPTOP, openPage, PHONE, startDashboard } from './dashboard-session.ts'
import { call, observation } from './helpers.ts'

const FP = '2edbc78717d7f7d5c4c7e3a0bca94ef7'

describe('dashboard', () => {
  let dash: Dashboard
  let tls: Dashboard['tls']
  let gate: Dashboard['gate']
  let tokens: Record<string, string>
  let admin: string

  before(async () => {
    dash = await startDashboard([
      { id: 'ssh-a', kind: 'sshgate' },
      { id: 'tls-a', kind: 'tlsgate' },
    ])
    ;({ tls, gate, tokens, admin } = dash)
    const res = await call(tls, gate.base, '/v1/observations/batch?instance_id=ssh-a', {
      token: tokens['ssh-a'],
      body: {
        instance_id: 'ssh-a',
        observations: [
          observation(FP, {
            ips: ['198.51.100.23'],
            sightings: [{ ip: '198.51.100.23', port: 51234, last_seen: new Date().toISOString() }],
            metadata: { kex_algorithms: 'sntrup761x25519-sha512@openssh.com' },
          }),
        ],
      },
    })
    assert.equal(res.status, 200)
    const smtp = await call(tls, gate.base, '/v1/smtp/reports?instance_id=tls-a', {
      token: tokens['tls-a'],
      body: {
        instance_id: 'tls-a',
        namespace: 'mx-main',
        listener: '0.0.0.0:25',
        coverage: { from: '2026-11-22T05:00:00Z', to: '2026-11-22T06:00:00Z' },
        generated_at: '2026-11-22T06:00:00Z',
        replay_id: 'abcdefabcdefabcdef',
        counts: { sessions: 42 },
        evidence: [],
      },
    })
    assert.equal(smtp.status, 201)
  })
  after(() => dash?.close())

  test('sign in, approve a fingerprint, see it change, block it for a day; foreign origins are refused', async () => {
    const { context, page, shot } = await openPage(dash, '/', { signIn: false })
    try {
      await page.locator('input[name=token]').fill('ega_wrong-token-wrong-token')
      await page.locator('#login button[type=submit]').click()
      await page.locator('#error').filter({ hasText: 'unknown administrator token' }).waitFor()

      await page.locator('input[name=token]').fill(admin)
      await page.locator('#login button[type=submit]').click()
      const row = page.locator(`tr[data-fingerprint="${FP}"]`)
      await row.waitFor()
      assert.equal((await row.locator('[data-testid=decision]').textContent())?.trim(), 'no decision')
      assert.match((await row.textContent()) ?? '', /198\.51\.100\.23 :51234/)
      assert.match((await row.textContent()) ?? '', /sntrup761x25519/)
      assert.match((await page.locator('#smtp').textContent()) ?? '', /mx-main.*sessions: 42/s)

      await page.waitForLoadState('load') // the deferred script has attached its handlers
      await row.locator('button[data-status=approved]').click()
      await page
        .locator(`tr[data-fingerprint="${FP}"] [data-testid=decision]`)
        .filter({ hasText: 'approved' })
        .waitFor()
      await page.locator(`tr[data-fingerprint="${FP}"] input[name=label]`).fill('ops laptop')
      await page.waitForLoadState('load') // the deferred script has attached its handlers
      await page.locator(`tr[data-fingerprint="${FP}"] form.label button`).click()
      await page
        .locator(`tr[data-fingerprint="${FP}"] td`)
        .filter({ hasText: /^ops laptop$/ })
        .waitFor()

      const decision = await call(tls, gate.base, `/api/decisions/ssh-a/${FP}`, { token: admin })
      assert.equal(decision.body.status, 'approved')
      assert.equal(decision.body.label, 'ops laptop')
      assert.match(decision.body.actor, /^admin:/)
      const policy = await call(tls, gate.base, '/v1/policy?instance_id=ssh-a', { token: tokens['ssh-a'] })
      assert.deepEqual(
        policy.body.decisions.map((d: { status: string }) => d.status),
        ['approved'],
      )

      // Per-instance view: the node link filters fingerprints to that instance.
      await page.locator('a', { hasText: 'tls-a' }).click()
      await page.locator('h2', { hasText: 'Fingerprints of tls-a' }).waitFor()
      assert.equal(await page.locator(`tr[data-fingerprint="${FP}"]`).count(), 0)
      await page.locator('a', { hasText: 'ssh-a' }).click()
      await page.locator(`tr[data-fingerprint="${FP}"]`).waitFor()

      // The session cookie: HttpOnly, Secure, SameSite=Strict; a write from another origin is refused.
      const cookie = (await context.cookies()).find((c) => c.name === 'edgegate_session')!
      assert.equal(cookie.httpOnly, true)
      assert.equal(cookie.secure, true)
      assert.equal(cookie.sameSite, 'Strict')
      const headers = { cookie: `edgegate_session=${cookie.value}` }
      const forged = await call(tls, gate.base, `/api/decisions/ssh-a/${FP}`, {
        method: 'PUT',
        body: { status: 'blocked' },
        headers: { ...headers, origin: 'https://evil.test' },
      })
      assert.equal(forged.status, 403)
      assert.equal(forged.body.error.code, 'origin_mismatch')
      const noOrigin = await call(tls, gate.base, `/api/decisions/ssh-a/${FP}`, {
        method: 'PUT',
        body: { status: 'blocked' },
        headers,
      })
      assert.equal(noOrigin.status, 403)
      assert.equal(
        (await call(tls, gate.base, `/api/decisions/ssh-a/${FP}`, { headers })).body.status,
        'approved',
        'reads need no Origin',
      )

      // A temporary ban: choose how long, then Block; the row and the API show until when.
      await page.waitForLoadState('load') // the deferred script has attached its handlers
      await page.locator(`tr[data-fingerprint="${FP}"] select[data-for]`).selectOption('24h')
      await page.locator(`tr[data-fingerprint="${FP}"] button[data-status=blocked]`).click()
      await page
        .locator(`tr[data-fingerprint="${FP}"] [data-testid=decision]`)
        .filter({ hasText: /^blocked\s*until \d{4}-/ })
        .waitFor()
      const temporary = await call(tls, gate.base, `/api/decisions/ssh-a/${FP}`, { headers })
      assert.equal(temporary.body.status, 'blocked')
      assert.ok(Math.abs(Date.parse(temporary.body.expires_at) - Date.now() - 86_400_000) < 60_000)
      await shot('overview-temporary-block')
      // On a laptop the fingerprints table fits: no sideways scrolling to reach a row's buttons.
      const overflow = await page
        .locator('#fingerprints')
        .evaluate((t) => t.parentElement!.scrollWidth - t.parentElement!.clientWidth)
      assert.ok(overflow <= 0, `the fingerprints table is ${overflow}px wider than the page`)
      // Sightings and metadata open on demand, from the keyboard too.
      const details = page.locator(`tr[data-fingerprint="${FP}"] details`)
      await details.locator('summary').focus()
      await page.keyboard.press('Enter')
      assert.equal(await details.evaluate((d) => (d as HTMLDetailsElement).open), true)
      // On a phone each row is a card whose cells carry their column's heading: nothing scrolls sideways.
      await page.setViewportSize(PHONE)
      for (const table of ['#nodes', '#fingerprints']) {
        const wide = await page
          .locator(table)
          .evaluate((t) => t.parentElement!.scrollWidth - t.parentElement!.clientWidth)
        assert.ok(wide <= 0, `${table} is ${wide}px wider than a phone`)
      }
      const decisionCell = page.locator(`tr[data-fingerprint="${FP}"] td[data-testid=decision]`)
      assert.equal(
        await decisionCell.evaluate((td) => getComputedStyle(td, '::before').content),
        '"Decision"',
        'the cell is labelled with its column',
      )
      await shot('overview-phone')
      await page.setViewportSize(LAPTOP)

      await page.waitForLoadState('load') // the deferred script has attached its handlers
      await page.locator('#logout').click()
      await page.locator('#login').waitFor()
      assert.equal(
        (await call(tls, gate.base, '/api/session', { headers })).status,
        401,
        'signed out: the session is gone',
      )
    } finally {
      await context.close()
    }
  })
})
