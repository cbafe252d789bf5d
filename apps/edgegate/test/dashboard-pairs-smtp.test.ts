/**
 * The dashboard's pairings view (list, add, remove, by keyboard, with the candidate report
 * following) and SMTP report summaries, in Chromium: content, no inline script or CSP
 * violation, user-supplied text never HTML, screenshots (laptop and phone) under
 * apps/edgegate/test-output/.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Dashboard, LAPTOP, openPage, PHONE, startDashboard, unreadableText } from './dashboard-session.ts'
import { call, type Json, observation } from './helpers.ts'

const FP = 't13d1516h2_8daaf6152771_nosni0000000'
const iso = (ms: number) => new Date(ms).toISOString()

describe('dashboard pairings and SMTP reports', () => {
  let dash: Dashboard
  let tls: Dashboard['tls']
  let gate: Dashboard['gate']
  let tokens: Record<string, string>
  let admin: string

  before(async () => {
    dash = await startDashboard(
      [
        { id: 'tls-edge-1', kind: 'tlsgate' },
        { id: 'tls-edge-2', kind: 'tlsgate' },
        { id: 'web-shop', kind: 'websignal' },
      ],
      ['--web-shadow-enabled'],
    )
    ;({ tls, gate, tokens, admin } = dash)
    const t = Date.now() - 60_000
    // A scanner connecting by address: no SNI, so only a pairing correlates it.
    const obs = await call(tls, gate.base, '/v1/observations/batch?instance_id=tls-edge-1', {
      token: tokens['tls-edge-1'],
      body: {
        instance_id: 'tls-edge-1',
        observations: [
          observation(FP, {
            ips: ['198.51.100.7'],
            ports: [443],
            sightings: [{ ip: '198.51.100.7', port: 50000, last_seen: iso(t) }],
            metadata: { ja4: FP },
          }),
        ],
      },
    })
    assert.equal(obs.status, 200)
    const sigs = await call(tls, gate.base, '/v1/signals/batch?instance_id=web-shop', {
      token: tokens['web-shop'],
      body: {
        instance_id: 'web-shop',
        signals: [
          {
            event_id: 'p-1',
            observed_at: iso(t + 1000),
            host: 'shop.example',
            site: 'shop',
            ip: '198.51.100.7',
            trigger: 'suspicious_uri',
            connections: 10,
            errors: 9,
            successes: 1,
            window_seconds: 60,
          },
        ],
      },
    })
    assert.equal(sigs.status, 200, JSON.stringify(sigs.body))
    for (const [i, listener] of ['0.0.0.0:25', '[::]:587'].entries()) {
      const r = await call(tls, gate.base, '/v1/smtp/reports?instance_id=tls-edge-2', {
        token: tokens['tls-edge-2'],
        body: {
          instance_id: 'tls-edge-2',
          namespace: 'mx',
          listener,
          coverage: { from: iso(t - 3_600_000), to: iso(t) },
          generated_at: iso(t + 1000),
          replay_id: `replay${i}`.padEnd(32, 'x'),
          counts: { connections: 1200 + i, tls_failures: 31, starttls_refused: 4 },
          evidence: Array.from({ length: 12 }, (_, k) => ({
            kind: k === 0 ? 'tls_failure' : 'auth_failure',
            ip: `203.0.113.${k + 1}`,
            ...(k === 1 ? { fingerprint: FP } : {}),
            count: 100 - k,
            last_seen: iso(t),
          })),
        },
      })
      assert.equal(r.status, 201, JSON.stringify(r.body))
    }
  })
  after(() => dash?.close())

  const candidates = async () =>
    (await call(tls, gate.base, '/api/web-candidates', { token: admin })).body.candidates.filter(
      (c: Json) => c.fingerprint === FP,
    ).length

  test('pairings: add and remove by keyboard; the candidate report follows; SMTP summaries', async () => {
    const { context, page, problems, shot } = await openPage(dash, '/pairs')
    try {
      await page.locator('h1', { hasText: 'Pairings' }).waitFor()
      assert.equal(await page.locator('#pairs tbody tr').count(), 0)
      assert.equal(await candidates(), 0, 'no SNI, no pairing: no candidate')

      // Add by keyboard: choose the second TLS gate's sibling, then Enter on the Pair button.
      assert.deepEqual(await page.locator('select[name=websignal_id] option').allTextContents(), ['web-shop'])
      assert.deepEqual(await page.locator('select[name=tlsgate_id] option').allTextContents(), [
        'tls-edge-1',
        'tls-edge-2',
      ])
      await page.locator('select[name=tlsgate_id]').focus()
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Pair')
      await page.keyboard.press('Enter')
      await page.locator('#pairs tr[data-tlsgate="tls-edge-1"]').waitFor()
      // After the reload focus is back on the button that acted.
      await page.waitForFunction(() => document.activeElement?.textContent === 'Pair')
      assert.match((await page.locator('#pairs tbody').textContent()) ?? '', /web-shop\s*tls-edge-1\s*admin:/)
      assert.equal(await candidates(), 1, 'the pairing correlates the stored signal with the SNI-less sighting')
      await shot('pairs')
      await page.setViewportSize(PHONE)
      await shot('pairs-phone')
      await page.setViewportSize(LAPTOP)

      // Pairing an existing pair again is idempotent; removing goes by the row's button.
      await page.waitForLoadState('load') // the deferred script has attached its handlers
      await page.locator('#pairs button[data-unpair]').focus()
      await page.keyboard.press('Enter')
      await page.locator('#pairs tbody tr').first().waitFor({ state: 'detached' })
      // Its row is gone: focus lands on the form that adds one, not the top of the page.
      await page.waitForFunction(() => document.activeElement?.textContent === 'Pair')
      assert.equal(await candidates(), 0, 'removing the pairing removes its matches')

      // SMTP report summaries: totals over both listeners, each report's counts and top evidence.
      await page.locator('nav a', { hasText: 'SMTP reports' }).click()
      await page.locator('h1', { hasText: 'SMTP reports' }).waitFor()
      const summary = (await page.locator('#smtp-summary').textContent()) ?? ''
      assert.match(summary, /2 report\(s\) from 1 node\(s\)/)
      assert.match(summary, /connections\s*2,401/)
      assert.match(summary, /tls_failures\s*62/)
      assert.equal(await page.locator('section.report').count(), 2)
      const first = page.locator('section.report').first()
      assert.match((await first.locator('caption').textContent()) ?? '', /largest counts first \(10 of 12\)/)
      assert.equal(await first.locator('table.evidence tbody tr').count(), 10)
      assert.match(
        (await first.locator('table.evidence tbody tr').first().textContent()) ?? '',
        /tls_failure\s*203\.0\.113\.1\s*100/,
      )
      await shot('smtp')
      await page.setViewportSize(PHONE)
      await shot('smtp-phone')
      await page.setViewportSize(LAPTOP)

      // The audit log: the pairing just added and removed, by whom; filtered by keyboard.
      await page.locator('nav a', { hasText: 'Audit log' }).click()
      await page.locator('h1', { hasText: 'Audit log' }).waitFor()
      const actions = async () => page.locator('#audit tbody tr td:nth-child(3)').allTextContents()
      const all = await actions()
      assert.deepEqual(all.slice(0, 2), ['web_pair.remove', 'web_pair.add'])
      assert.ok(all.includes('node.add'), all.join(', '))
      assert.match(
        (await page.locator('#audit tbody tr').first().textContent()) ?? '',
        /admin:\S+\s*web_pair\.remove\s*web-shop\/tls-edge-1/,
      )
      await page.locator('select[name=action]').selectOption('web_pair')
      await page.locator('input[name=actor]').focus()
      await page.keyboard.type('<b>nobody</b>')
      await page.keyboard.press('Enter')
      await page.waitForURL(/\/audit\?action=web_pair&actor=/)
      assert.equal(await page.locator('#audit tbody tr').count(), 0, 'no entry by that actor')
      assert.equal(await page.locator('input[name=actor]').inputValue(), '<b>nobody</b>', 'shown as text, not markup')
      assert.equal(await page.locator('main b').count(), 0)
      await page.goto(`${gate.base}/audit?action=web_pair`)
      assert.deepEqual(await actions(), ['web_pair.remove', 'web_pair.add'])
      await shot('audit')
      await page.setViewportSize(PHONE)
      await shot('audit-phone')
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
    }
  })

  test('dark: SMTP reports (panels, counts, evidence tables) and pairings readable on a laptop and a phone', async () => {
    const { context, page, problems, shot } = await openPage(dash, '/smtp', { colorScheme: 'dark' })
    try {
      for (const path of ['/smtp', '/pairs']) {
        await page.goto(`${gate.base}${path}`)
        await page.locator('h1').waitFor()
        if (path === '/smtp') assert.equal(await page.locator('section.report').count(), 2, 'reports to read')
        for (const [size, viewport] of [
          ['laptop', LAPTOP],
          ['phone', PHONE],
        ] as const) {
          await page.setViewportSize(viewport)
          assert.deepEqual(await unreadableText(page), [], `${path}, ${size}`)
          await shot(`dark${path.replace('/', '-')}-${size}`)
        }
      }
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
    }
  })

  test('the new views need a session: the sign-in page without one', async () => {
    for (const path of ['/pairs', '/smtp', '/audit']) {
      const r = await call(tls, gate.base, path)
      assert.equal(r.status, 200)
      assert.match(String(r.body), /name="token"/)
      assert.doesNotMatch(String(r.body), /web-shop|tls_failure/)
    }
  })
})
