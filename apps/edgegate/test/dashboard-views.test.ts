/**
 * The dashboard's views in Chromium, with web evidence and the controller running: the
 * overview, decisions (filters, automated ones marked with their expiry), web candidates (shadow
 * verdict and reasons, enforcement mode, the kill switch), signals, and the notice of a token about
 * to expire. Keyboard use, no inline
 * script, no CSP violation. Screenshots of each view (laptop and phone widths) are saved under
 * apps/edgegate/test-output/.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { VIEWS } from '../src/dashboard/html.ts'
import { openEdgeDatabase } from '../src/db/open.ts'
import { type Dashboard, LAPTOP, openPage, PHONE, startDashboard, unreadableText } from './dashboard-session.ts'
import { call, type Json, observation, waitFor } from './helpers.ts'

const FP = 't13d1516h2_8daaf6152771_b0da82dd1658'
const FP2 = 't13d1715h2_5b57614c22b0_3d5424432f57'
const iso = (ms: number) => new Date(ms).toISOString()

describe('dashboard views', () => {
  let dash: Dashboard
  let tls: Dashboard['tls']
  let gate: Dashboard['gate']
  let tokens: Record<string, string>
  let admin: string

  before(async () => {
    dash = await startDashboard(
      [
        { id: 'tls-edge-1', kind: 'tlsgate' },
        { id: 'ssh-bastion', kind: 'sshgate' },
        { id: 'web-shop', kind: 'websignal' },
      ],
      [
        '--web-shadow-enabled',
        '--web-shadow-min-signals',
        '3',
        '--web-enforcement-mode',
        'enforce',
        '--web-enforcement-interval',
        '1s',
      ],
    )
    ;({ tls, gate, tokens, admin } = dash)
    const t = Date.now() - 60_000
    const tlsObs = (fp: string, ips: string[]) =>
      observation(fp, {
        ips,
        ports: [443],
        sightings: ips.map((ip, i) => ({ ip, port: 50000 + i, last_seen: iso(t) })),
        metadata: { sni: 'shop.example', ja4: fp },
      })
    const obs = await call(tls, gate.base, '/v1/observations/batch?instance_id=tls-edge-1', {
      token: tokens['tls-edge-1'],
      body: {
        instance_id: 'tls-edge-1',
        observations: [tlsObs(FP, ['198.51.100.7', '203.0.113.9']), tlsObs(FP2, ['192.0.2.44'])],
      },
    })
    assert.equal(obs.status, 200)
    let n = 0
    const sig = (ip: string, site: string, errors: number) => ({
      event_id: `dash-${++n}`,
      observed_at: iso(t + n),
      host: 'shop.example',
      site,
      ip,
      trigger: 'suspicious_uri',
      connections: 12,
      errors,
      successes: 12 - errors,
      window_seconds: 60,
    })
    const sigs = await call(tls, gate.base, '/v1/signals/batch?instance_id=web-shop', {
      token: tokens['web-shop'],
      body: {
        instance_id: 'web-shop',
        signals: [
          sig('198.51.100.7', 'shop', 11),
          sig('203.0.113.9', 'blog', 10),
          sig('198.51.100.7', 'shop', 12),
          sig('192.0.2.44', 'shop', 1),
          sig('192.0.2.44', '<img src=x onerror=alert(1)>', 2),
        ],
      },
    })
    assert.equal(sigs.status, 200, JSON.stringify(sigs.body))
    const ssh = await call(tls, gate.base, '/v1/observations/batch?instance_id=ssh-bastion', {
      token: tokens['ssh-bastion'],
      body: { instance_id: 'ssh-bastion', observations: [observation('2edbc78717d7f7d5c4c7e3a0bca94ef7')] },
    })
    assert.equal(ssh.status, 200)
    await waitFor('the controller blocks the scanner', async () => {
      const r = await call(tls, gate.base, `/api/decisions/tls-edge-1/${FP}`, { token: admin })
      return r.status === 200 && r.body.status === 'blocked'
    })
  })
  after(() => dash?.close())

  test('every view: content, keyboard, CSP, screenshots; the kill switch and a verdict from the candidates view', async () => {
    // A TLS gate whose client certificate has 5 days left, as it last presented it.
    const d = await openEdgeDatabase(dash.database, 1)
    try {
      await d.db
        .updateTable('nodes')
        .set({ cert_expires_ms: Date.now() + 5 * 86_400_000 + 3_600_000 })
        .where('instance_id', '=', 'tls-edge-1')
        .execute()
    } finally {
      await d.close()
    }
    const { context, page, problems, response, shot } = await openPage(dash, '/')
    try {
      assert.doesNotMatch(response?.headers()['content-security-policy'] ?? '', /unsafe-inline/)
      // Overview
      await page.locator(`tr[data-fingerprint="${FP}"]`).first().waitFor()
      assert.match(
        (await page.locator('#nodes tr', { hasText: 'tls-edge-1' }).locator('td.cert-soon').textContent()) ?? '',
        /^\d{4}-\d\d-\d\d \S+Z \(5 days left\)$/,
      )
      assert.equal(
        await page.locator('#nodes tr', { hasText: 'ssh-bastion' }).locator('td').last().textContent(),
        '–',
        'a token node has no certificate',
      )
      await shot('overview')
      // An empty table says why it is empty instead of showing headings over nothing.
      const noReports = page.locator('p[data-empty=smtp]')
      assert.equal(await noReports.isVisible(), true, 'the overview says there are no SMTP reports')
      assert.match((await noReports.textContent()) ?? '', /^No SMTP reports yet/)
      assert.equal(await page.locator('#smtp').isVisible(), false, 'no empty SMTP table')
      assert.equal(await page.locator('p[data-empty]').count(), 1, 'the other tables have rows')
      // An error from a row's button far down a phone's page shows where the user is looking.
      await page.setViewportSize(PHONE)
      await page.waitForLoadState('load') // the deferred script has attached its handlers
      const labelled = page.locator(`#fingerprints tr[data-fingerprint="${FP2}"]`)
      await labelled.locator('input[name=label]').evaluate((i) => {
        ;(i as HTMLInputElement).value = 'x'.repeat(300)
      })
      await labelled.getByRole('button', { name: 'Save label' }).click()
      const error = page.locator('#error')
      await error.waitFor()
      assert.doesNotMatch((await error.textContent()) ?? '', /[{}]/, 'a message, not JSON')
      const box = await error.boundingBox()
      const headerBottom = await page.locator('header').evaluate((h) => h.getBoundingClientRect().bottom)
      assert.ok(
        box && box.y >= headerBottom && box.y + box.height <= PHONE.height,
        `the error is on screen below the sticky header (${JSON.stringify(box)}, header ends at ${headerBottom})`,
      )
      await shot('overview-error-phone')
      // On a phone every overview card fits the screen, TLS fingerprints (long, unbroken) included.
      for (const table of ['#nodes', '#fingerprints', '#recent']) {
        const wide = await page
          .locator(table)
          .evaluate((t) => t.parentElement!.scrollWidth - t.parentElement!.clientWidth)
        assert.ok(wide <= 0, `${table} is ${wide}px wider than a phone`)
      }
      // The refused request is the only problem so far; the rest of the test counts from here.
      assert.deepEqual(problems.splice(0), [
        'Failed to load resource: the server responded with a status of 400 (Bad Request)',
      ])
      await page.setViewportSize(LAPTOP)
      await page.reload()
      await page.locator(`tr[data-fingerprint="${FP}"]`).first().waitFor()

      // Keyboard: the skip link is the first stop; the menu is reachable by Tab and Enter.
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content')
      let onMenu = false
      for (let i = 0; i < 6 && !onMenu; i++) {
        await page.keyboard.press('Tab')
        onMenu = (await page.evaluate(() => document.activeElement?.textContent)) === 'Web candidates'
      }
      assert.ok(onMenu, 'Tab reaches the Web candidates menu entry')
      await page.keyboard.press('Enter')
      await page.locator('h1', { hasText: 'Web candidates' }).waitFor()

      // Web candidates: the enforcement panel and the shadow verdicts.
      assert.equal((await page.locator('[data-testid=mode]').textContent())?.trim(), 'enforce')
      const scanner = page.locator(`#candidates tr[data-fingerprint="${FP}"]`)
      assert.match((await scanner.textContent()) ?? '', /already_blocked/)
      assert.match((await scanner.textContent()) ?? '', /automated_block: until/)
      assert.match((await scanner.textContent()) ?? '', /cross-site/)
      const quiet = page.locator(`#candidates tr[data-fingerprint="${FP2}"]`)
      assert.match((await quiet.textContent()) ?? '', /insufficient_evidence/)
      assert.match((await quiet.textContent()) ?? '', /min_signals: 2 of 3/)
      assert.equal(await page.locator('img').count(), 0, 'user-supplied text is never HTML')
      await shot('web-candidates')
      // A phone-width rendering of the same view.
      await page.setViewportSize(PHONE)
      await shot('web-candidates-phone')
      await page.setViewportSize(LAPTOP)

      // Decisions: the automated block is marked with its expiry; filter by source.
      await page.locator('nav a', { hasText: 'Decisions' }).click()
      await page.locator('h1', { hasText: 'Decisions' }).waitFor()
      const auto = page.locator(`#decisions tr[data-fingerprint="${FP}"]`)
      assert.match((await auto.textContent()) ?? '', /automated\s*web-controller\s*expires \d{4}-/)
      await page.locator('select[name=source]').selectOption('manual')
      await page.locator('.filters button[type=submit]').click()
      await page.waitForURL(/source=manual/)
      assert.equal(await page.locator(`#decisions tr[data-fingerprint="${FP}"]`).count(), 0)
      await page.locator('select[name=source]').selectOption('web-controller')
      await page.locator('.filters button[type=submit]').click()
      await page.waitForURL(/source=web-controller/)
      await page.locator(`#decisions tr[data-fingerprint="${FP}"]`).waitFor()
      await shot('decisions')

      // Signals
      await page.locator('nav a', { hasText: 'Signals' }).click()
      await page.locator('#signals tbody tr').first().waitFor()
      assert.equal(await page.locator('#signals tbody tr').count(), 5)
      assert.match((await page.locator('#signals').textContent()) ?? '', /<img src=x onerror=alert\(1\)>/)
      await shot('signals')

      // The kill switch, by keyboard: focus the button and press Enter; it asks first (Cancel has
      // the focus), and Tab, Enter on its Engage button engages.
      await page.locator('nav a', { hasText: 'Web candidates' }).click()
      await page.waitForURL(/\/web$/) // waits for the load event: the handlers are attached
      await page.locator('#kill-switch').focus()
      await page.keyboard.press('Enter')
      await page.locator('#kill-confirm[open]').waitFor()
      assert.equal((await page.locator('[data-testid=automated]').textContent())?.trim(), '1')
      assert.match(
        (await page.locator('#kill-confirm').textContent()) ?? '',
        /The 1 automated block in force becomes pending at once; gates drop it on their next pull\./,
      )
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'kill-confirm-engage')
      await page.keyboard.press('Enter')
      await page.locator('[data-testid=mode]', { hasText: 'disabled' }).waitFor()
      assert.match((await page.locator('[data-testid=kill]').textContent()) ?? '', /engaged/)
      assert.equal((await page.locator('[data-testid=automated]').textContent())?.trim(), '0')
      assert.match((await page.locator(`#candidates tr[data-fingerprint="${FP}"]`).textContent()) ?? '', /would_block/)
      await shot('web-candidates-kill-switch')
      const policy = await call(tls, gate.base, '/v1/policy?instance_id=tls-edge-1', { token: tokens['tls-edge-1'] })
      assert.deepEqual(
        policy.body.decisions.filter((d: Json) => d.fingerprint === FP).map((d: Json) => d.status),
        ['pending'],
      )

      // A verdict from the candidates view: approving protects the fingerprint.
      await page.waitForLoadState('load') // the deferred script has attached its handlers
      await page.locator(`#candidates tr[data-fingerprint="${FP}"] button[data-status=approved]`).click()
      await page.locator(`#candidates tr[data-fingerprint="${FP}"] .shadow-protected`).waitFor()
      await page.waitForLoadState('load') // the deferred script has attached its handlers
      await page.locator('#kill-switch', { hasText: 'Release' }).click()
      await page.locator('[data-testid=mode]', { hasText: 'enforce' }).waitFor()
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
    }
  })

  test('light and dark: every view readable on a laptop and a phone, where the header is compact and scrolls away', async () => {
    const sizes = [
      ['laptop', LAPTOP],
      ['phone', PHONE],
    ] as const
    for (const colorScheme of ['light', 'dark'] as const) {
      const signIn = await openPage(dash, '/', { signIn: false, colorScheme })
      try {
        for (const [size, viewport] of sizes) {
          await signIn.page.setViewportSize(viewport)
          assert.deepEqual(await unreadableText(signIn.page), [], `sign-in, ${colorScheme}, ${size}`)
          if (colorScheme === 'dark') await signIn.shot(`dark-sign-in-${size}`)
        }
      } finally {
        await signIn.context.close()
      }
      const { context, page, problems, shot } = await openPage(dash, '/', { colorScheme })
      try {
        for (const [path, name] of VIEWS) {
          await page.goto(`${gate.base}${path}`)
          await page.locator('nav a[aria-current=page]', { hasText: name }).waitFor()
          for (const [size, viewport] of sizes) {
            await page.setViewportSize(viewport)
            assert.deepEqual(await unreadableText(page), [], `${name}, ${colorScheme}, ${size}`)
            if (colorScheme === 'dark') await shot(`dark-${name.toLowerCase().replace(/ /g, '-')}-${size}`)
          }
        }
        // The error box, in the scheme too: a label the API refuses.
        await page.goto(`${gate.base}/`)
        await page.waitForLoadState('load') // the deferred script has attached its handlers
        const row = page.locator(`#fingerprints tr[data-fingerprint="${FP2}"]`)
        await row.locator('input[name=label]').fill('\u001b[31m')
        await row.getByRole('button', { name: 'Save label' }).click()
        await page.locator('#error').waitFor()
        assert.deepEqual(await unreadableText(page), [], `the error box, ${colorScheme}`)
        assert.deepEqual(problems.splice(0), [
          'Failed to load resource: the server responded with a status of 400 (Bad Request)',
        ])

        // A phone's header: two short rows that scroll away with the page, not a sticky fifth of the screen.
        await page.goto(`${gate.base}/`)
        const header = page.locator('header')
        const height = await header.evaluate((h) => h.getBoundingClientRect().height)
        assert.ok(height <= PHONE.height / 9, `the header is ${height}px high on a phone`)
        await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight))
        await page.waitForFunction(() => window.scrollY > 0)
        const bottom = await header.evaluate((h) => h.getBoundingClientRect().bottom)
        assert.ok(bottom <= 0, `scrolled down, the header still covers ${bottom}px of the screen`)
        // A laptop keeps the menu in sight.
        await page.setViewportSize(LAPTOP)
        await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight))
        await page.waitForFunction(() => window.scrollY > 0)
        assert.equal(await header.evaluate((h) => h.getBoundingClientRect().top), 0)
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    }
  })

  test('keyboard only: a verdict for a while and the kill switch; after the reload focus is back on the control that acted', async () => {
    const { context, page, problems, shot } = await openPage(dash, '/')
    try {
      // On a phone the row is screens down: the reload must not leave the user at the top.
      await page.setViewportSize(PHONE)
      const row = `#fingerprints tr[data-fingerprint="${FP2}"]`
      await page.locator(`${row} select[data-for]`).focus()
      await page.keyboard.press('ArrowDown') // permanent -> for 1 hour
      assert.equal(await page.locator(`${row} select[data-for]`).inputValue(), '1h')
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Approve')
      await page.keyboard.press('Enter')
      await page
        .locator(`${row} [data-testid=decision]`)
        .filter({ hasText: /^approved\s*until / })
        .waitFor()
      await page.waitForFunction(
        (selector) => document.activeElement === document.querySelector(selector),
        `${row} button[data-status="approved"]`,
      )
      const box = await page.locator(`${row} button[data-status="approved"]`).boundingBox()
      assert.ok(
        box && box.y >= 0 && box.y + box.height <= PHONE.height,
        `the focused button is on screen: ${JSON.stringify(box)}`,
      )
      await shot('keyboard-verdict-focus-phone')
      // Its label, by keyboard: type, Enter; focus back on Save label.
      await page.locator(`${row} input[name=label]`).focus()
      await page.keyboard.type('night scanner')
      await page.keyboard.press('Enter')
      await page
        .locator(`${row} td`)
        .filter({ hasText: /^night scanner$/ })
        .waitFor()
      await page.waitForFunction(
        (selector) => document.activeElement === document.querySelector(selector),
        `${row} form.label button`,
      )
      const api = await call(tls, gate.base, `/api/decisions/tls-edge-1/${FP2}`, { token: admin })
      assert.deepEqual(
        [api.body.status, api.body.label, api.body.expires_at !== null],
        ['approved', 'night scanner', true],
      )
      await call(tls, gate.base, `/api/decisions/tls-edge-1/${FP2}`, { method: 'DELETE', token: admin })

      // The kill switch: Enter, then Tab and Enter on the dialog's Engage engage it, and Enter on
      // the same (focused) button releases it.
      await page.setViewportSize(LAPTOP)
      await page.goto(`${gate.base}/web`)
      await page.locator('#kill-switch').focus()
      await page.keyboard.press('Enter')
      await page.locator('#kill-confirm[open]').waitFor()
      await page.keyboard.press('Tab')
      await page.keyboard.press('Enter')
      await page.locator('[data-testid=kill]', { hasText: 'engaged' }).waitFor()
      await page.waitForFunction(() => document.activeElement?.id === 'kill-switch')
      await page.keyboard.press('Enter')
      await page.locator('[data-testid=kill]', { hasText: 'off' }).waitFor()
      await page.waitForFunction(() => document.activeElement?.id === 'kill-switch')
      // A plain reload later does not move focus: the remembered control is used once.
      await page.reload()
      await page.locator('h1', { hasText: 'Web candidates' }).waitFor()
      await page.waitForLoadState('load')
      assert.equal(await page.evaluate(() => document.activeElement?.localName), 'body')
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
    }
  })

  test('engaging the kill switch asks first in a dialog: Escape and Cancel change nothing, focus back on the button; light and dark, laptop and phone', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const { context, page, problems, shot } = await openPage(dash, '/web', { colorScheme })
      try {
        await page.locator('[data-testid=kill]', { hasText: 'off' }).waitFor()
        const blocks = (await page.locator('[data-testid=automated]').textContent())?.trim()
        const dialog = page.locator('#kill-confirm')
        assert.equal(await dialog.isVisible(), false)
        for (const [size, viewport] of [
          ['laptop', LAPTOP],
          ['phone', PHONE],
        ] as const) {
          await page.setViewportSize(viewport)
          await page.locator('#kill-switch').focus()
          await page.keyboard.press('Enter')
          await dialog.and(page.locator('[open]')).waitFor()
          // Cancel has the focus: a second stray Enter does nothing.
          assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel')
          // The scanner's block was made manual (approved) by the first test: none is automated now.
          assert.equal(blocks, '0')
          assert.match(
            (await page.getByRole('dialog', { name: 'Engage the kill switch?' }).textContent()) ?? '',
            /No automated block is in force now\.\sNo edgegate process makes new automated blocks until the switch is released/,
          )
          const box = await dialog.boundingBox()
          assert.ok(box && box.x >= 0 && box.x + box.width <= viewport.width, `${size}: ${JSON.stringify(box)}`)
          assert.deepEqual(await unreadableText(page), [], `${colorScheme}, ${size}`)
          await shot(`kill-switch-confirm-${colorScheme}-${size}`)
          await page.keyboard.press(size === 'laptop' ? 'Escape' : 'Enter')
          await page.waitForFunction(() => document.getElementById('kill-confirm')?.hasAttribute('open') === false)
          assert.equal(await page.evaluate(() => document.activeElement?.id), 'kill-switch', 'focus back on the button')
        }
        // Nothing was sent: the switch is off and the blocks are in force.
        await page.reload()
        assert.match((await page.locator('[data-testid=kill]').textContent()) ?? '', /^off/)
        assert.equal((await page.locator('[data-testid=automated]').textContent())?.trim(), blocks)
        const state = await call(tls, gate.base, '/api/web-enforcement', { token: admin })
        assert.equal(state.body.kill_switch.engaged, false)
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    }
  })

  test('an instance without decisions says so, while other instances have some', async () => {
    const { context, page, problems, shot } = await openPage(dash, '/')
    try {
      await page.locator('#recent tbody tr').first().waitFor()
      assert.equal(await page.locator('p[data-empty=decisions]').count(), 0, 'the whole overview lists decisions')
      await page.locator('#nodes a', { hasText: 'ssh-bastion' }).click()
      await page.locator('h2', { hasText: 'Recent decisions of ssh-bastion' }).waitFor()
      const empty = page.locator('p[data-empty=decisions]')
      assert.equal((await empty.textContent())?.trim(), 'No decisions for ssh-bastion yet.')
      assert.equal(await page.locator('#recent').isVisible(), false)
      await page.setViewportSize(PHONE)
      await shot('overview-instance-no-decisions-phone')
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
    }
  })

  test('an address no route takes: the dashboard page for a browser, coded JSON for the API', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const { context, page, problems, response, shot } = await openPage(dash, '/no/such-view?<b>x</b>', {
        signIn: false,
        colorScheme,
      })
      try {
        assert.equal(response?.status(), 404)
        assert.match(response?.headers()['content-type'] ?? '', /^text\/html/)
        assert.match(response?.headers()['content-security-policy'] ?? '', /script-src 'self'/)
        assert.equal(await page.title(), 'edgegate: page not found')
        assert.equal((await page.locator('h1').textContent())?.trim(), 'Page not found')
        const text = (await page.locator('body').textContent()) ?? ''
        assert.doesNotMatch(text, /such-view|<b>/, 'the address is not echoed')
        assert.equal(await page.locator('b').count(), 0)
        // The dashboard's stylesheet and header.
        assert.equal(await page.evaluate(() => (document.styleSheets[0]?.cssRules.length ?? 0) > 0), true)
        assert.equal(await page.locator('header a.brand').getAttribute('href'), '/')
        for (const [size, viewport] of [
          ['laptop', LAPTOP],
          ['phone', PHONE],
        ] as const) {
          await page.setViewportSize(viewport)
          assert.deepEqual(await unreadableText(page), [], `${colorScheme}, ${size}`)
          await shot(`not-found-${colorScheme}-${size}`)
        }
        // Home by keyboard.
        let onHome = false
        for (let i = 0; i < 4 && !onHome; i++) {
          await page.keyboard.press('Tab')
          onHome = (await page.evaluate(() => document.activeElement?.id)) === 'home'
        }
        assert.ok(onHome, 'Tab reaches the link home')
        await page.keyboard.press('Enter')
        await page.locator('#login').waitFor()
        assert.equal(new URL(page.url()).pathname, '/')

        // The API keeps its coded answers, for a browser's navigation and for fetch().
        for (const path of ['/api/nope', '/v1/nope']) {
          const api = await page.goto(`${gate.base}${path}`)
          assert.equal(api?.status(), 404)
          assert.match(api?.headers()['content-type'] ?? '', /^application\/json/)
          assert.equal(JSON.parse(await api!.text()).error.code, 'not_found')
        }
        const fetched = await page.evaluate(async () => {
          const r = await fetch('/no/such-view')
          return [r.status, r.headers.get('content-type'), (await r.json()).error.code]
        })
        assert.deepEqual(fetched, [404, 'application/json; charset=utf-8', 'not_found'])
        assert.deepEqual(
          problems.filter((p) => !/status of 404/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    }
  })

  test('an administrator whose token expires within a fortnight reads so on every view, laptop and phone', async () => {
    const setExpiry = async (expiresMs: number | null) => {
      const d = await openEdgeDatabase(dash.database, 1)
      try {
        await d.db.updateTable('admins').set({ expires_ms: expiresMs }).execute()
      } finally {
        await d.close()
      }
    }
    await setExpiry(Date.now() + 3 * 86_400_000 + 3_600_000)
    const { context, page, problems, shot } = await openPage(dash, '/')
    try {
      const notice = page.locator('#token-notice')
      assert.match(
        (await notice.textContent()) ?? '',
        /^Your administrator token expires on \d{4}-\d\d-\d\d \S+Z \(3 days left\), and this session with it\. An operator issues a new one with edgegate admin rotate-token admin\d+\.$/,
      )
      await page.locator('nav a', { hasText: 'Decisions' }).click()
      await page.locator('h1', { hasText: 'Decisions' }).waitFor()
      assert.equal(await page.locator('#token-notice').count(), 1, 'on every view')
      await page.setViewportSize(PHONE)
      const box = await page.locator('#token-notice').boundingBox()
      assert.ok(box && box.x >= 0 && box.x + box.width <= PHONE.width, JSON.stringify(box))
      await shot('token-notice-phone')
      const session = await page.evaluate(async () => (await fetch('/api/session')).json())
      assert.equal(Date.parse(session.token_expires_at) > Date.now() + 3 * 86_400_000, true, JSON.stringify(session))
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
      await setExpiry(null)
    }
    // A token that never expires: no notice.
    const later = await openPage(dash, '/')
    try {
      await later.page.locator('h1').first().waitFor()
      assert.equal(await later.page.locator('#token-notice').count(), 0)
    } finally {
      await later.context.close()
    }
  })
})
