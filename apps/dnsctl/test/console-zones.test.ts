/**
 * The console's zone views in Debian's Chromium against a real dnsctl + knotd: sign in with a
 * link, create a zone from the form, edit an RRset inline (dry-run diff, then commit), a stale
 * page refused with 412, import and export zone text, roll back from the history, record text
 * shown as text, keyboard use, a phone layout. Screenshots go to apps/dnsctl/test-output/.
 */
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, test } from 'node:test'
import { type Browser, dnsQuery, type Page } from '@gatehouse/testkit'
import {
  type ConsoleHarness,
  launchChromium,
  lowContrast,
  pageProblems,
  screenshot,
  signedInPage,
  startConsoleHarness,
} from './console-helpers.ts'
import { json } from './helpers.ts'

const ZONE = 'console.test'

/** What knotd answers for name/type: addresses, TXT strings or the SOA serial. */
async function served(h: ConsoleHarness, name: string, type: 'A' | 'TXT' | 'SOA') {
  const a = await dnsQuery(h.knot.port, name, type)
  return a.answers.map((x) => {
    const data = (x as { data: unknown }).data
    if (type === 'SOA') return (data as { serial: number }).serial
    return type === 'TXT' ? String(data) : (data as string)
  })
}

describe('console: zones, RRsets, history', () => {
  let h: ConsoleHarness
  let browser: Browser
  let page: Page
  before(async () => {
    h = await startConsoleHarness()
    browser = await launchChromium()
    page = await signedInPage(browser, h)
  })
  after(async () => {
    await browser?.close()
    await h?.close()
  })

  test('signing in leaves no code in the address; an empty console says what to do', async () => {
    assert.equal(new URL(page.url()).hash, '#/zones')
    await page.getByText('No zones yet').waitFor()
    await screenshot(page, 'zones-empty')
    // A spent link shows the sign-in page with the reason.
    const other = await (await browser.newContext()).newPage()
    const link = await h.link()
    await other.goto(link)
    await other.getByRole('link', { name: 'Zones' }).waitFor()
    const again = await (await browser.newContext()).newPage()
    await again.goto(link)
    await again.getByText(/unknown, expired or already used/).waitFor()
    await screenshot(again, 'sign-in')
  })

  test('create a zone from a few fields: preview the records, then publish to knotd', async () => {
    await page.getByLabel('Zone name').first().fill(ZONE)
    await page.getByLabel('Name servers', { exact: true }).fill('ns1')
    await page.getByLabel('Name server addresses').fill('192.0.2.53')
    await page.getByRole('button', { name: 'Preview', exact: true }).click()
    const diff = page.locator('.diff')
    await diff.getByText(/3 to add, 0 to remove/).waitFor()
    assert.match(await diff.innerText(), /ns1 3600 IN A 192\.0\.2\.53/)
    await screenshot(page, 'zones-create-preview')
    await page.getByRole('button', { name: 'Create zone' }).click()
    await page.getByText(`Zone ${ZONE} created`).waitFor()
    await page.getByRole('link', { name: ZONE }).waitFor()
    assert.deepEqual(await served(h, `ns1.${ZONE}`, 'A'), ['192.0.2.53'])
    await screenshot(page, 'zones')
  })

  test('edit an RRset inline: the dry-run diff first, then the commit reaches knotd', async () => {
    await page.getByRole('link', { name: ZONE }).click()
    // Add www through the form (keyboard only: Tab between fields, Enter submits).
    await page.getByLabel('New RRset name').fill('www')
    await page.keyboard.press('Tab')
    await page.keyboard.press('Tab')
    await page.keyboard.type('300')
    await page.keyboard.press('Tab')
    await page.keyboard.type('192.0.2.10')
    await page.getByLabel('New RRset name').press('Enter')
    await page.locator('.diff').getByText('2 to add, 1 to remove').waitFor() // the record and the new SOA serial
    await page.getByRole('button', { name: /^Commit/ }).press('Enter')
    await page.getByText(/www A committed/).waitFor()

    await page.getByRole('button', { name: 'Edit www A' }).click()
    const records = page.getByLabel('Records of www A, one per line')
    await records.fill('192.0.2.10\n192.0.2.11')
    await page.getByRole('button', { name: 'Preview' }).first().click()
    const diff = page.locator('.diff')
    await diff.getByText('2 to add, 1 to remove').waitFor() // the new record, and the SOA serial moving
    assert.equal(await diff.locator('li.add', { hasText: 'www 300 IN A 192.0.2.11' }).count(), 1)
    assert.equal(await diff.locator('li.remove', { hasText: 'www' }).count(), 0)
    assert.deepEqual(await served(h, `www.${ZONE}`, 'A'), ['192.0.2.10'], 'a dry run changes nothing')
    await screenshot(page, 'rrsets-edit-preview')
    await page.getByRole('button', { name: 'Commit change of www A' }).click()
    await page.getByText(/change of www A committed/).waitFor()
    assert.deepEqual((await served(h, `www.${ZONE}`, 'A')).sort(), ['192.0.2.10', '192.0.2.11'])
    await screenshot(page, 'rrsets')
  })

  test('a page behind a concurrent change is refused (412), nothing is overwritten', async () => {
    await page.getByRole('button', { name: 'Edit www A' }).click()
    await page.getByLabel('Records of www A, one per line').fill('192.0.2.99')
    const rrsets = await json(await h.call('GET', `/v1/zones/${ZONE}/rrsets`))
    const other = await h.call('POST', `/v1/zones/${ZONE}/changes`, {
      expected_revision: rrsets.revision,
      changes: [{ action: 'upsert', name: 'mail', type: 'A', ttl: 300, records: ['192.0.2.25'] }],
    })
    assert.equal(other.status, 200)
    await page.getByRole('button', { name: 'Preview' }).first().click()
    await page
      .getByRole('alert')
      .getByText(/revision_mismatch/)
      .waitFor()
    assert.deepEqual((await served(h, `www.${ZONE}`, 'A')).sort(), ['192.0.2.10', '192.0.2.11'])
    await page.getByRole('button', { name: 'Close' }).click()
    await page.getByRole('button', { name: 'Cancel' }).click()
    await page.reload()
    await page.getByRole('cell', { name: 'mail', exact: true }).waitFor()
  })

  test('record text is shown as text, never as HTML', async () => {
    const rrsets = await json(await h.call('GET', `/v1/zones/${ZONE}/rrsets`))
    const res = await h.call('POST', `/v1/zones/${ZONE}/changes`, {
      expected_revision: rrsets.revision,
      changes: [{ action: 'upsert', name: 'x', type: 'TXT', ttl: 60, records: ['"<img src=x onerror=alert(1)>"'] }],
    })
    assert.equal(res.status, 200)
    await page.reload()
    await page.getByText('"<img src=x onerror=alert(1)>"').waitFor()
    assert.equal(await page.locator('main img').count(), 0)
  })

  test('export downloads the zone text; import previews the diff and replaces the zone', async () => {
    await page.goto(`${h.consoleBase}/console/#/zones`)
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: `Export ${ZONE}` }).click(),
    ])
    const text = await readFile((await download.path())!, 'utf8')
    const current = await json(await h.call('GET', `/v1/zones/${ZONE}`))
    assert.equal(text, current.zone_text)
    assert.equal(download.suggestedFilename(), `${ZONE}.zone`)

    const edited = text.replace(/^x\s.*\n/m, '').replace('192.0.2.25', '192.0.2.26')
    await page.getByLabel('Zone name').nth(1).fill(ZONE)
    await page.getByRole('textbox', { name: 'Zone text' }).fill(edited)
    await page.getByRole('button', { name: 'Preview import' }).click()
    const diff = page.locator('.diff')
    await diff.getByText('2 to add, 3 to remove').waitFor() // SOA and mail replaced, x removed
    await screenshot(page, 'zones-import-preview')
    await page.getByRole('button', { name: 'Replace zone' }).click()
    await page.getByText(`Zone ${ZONE} imported`).waitFor()
    assert.deepEqual(await served(h, `mail.${ZONE}`, 'A'), ['192.0.2.26'])
    assert.deepEqual(await served(h, `x.${ZONE}`, 'TXT'), [])
  })

  test('history: one-click rollback through the change pipeline, audited as the console user', async () => {
    await page.goto(`${h.consoleBase}/console/#/zones/${ZONE}/history`)
    const history = await json(await h.call('GET', `/v1/zones/${ZONE}/history`))
    // The revision that still had x TXT and mail 192.0.2.25: the one the import replaced.
    const target = history.history[0].revision as string
    const before = (await served(h, ZONE, 'SOA'))[0] as number
    await page.getByRole('button', { name: `Roll back to ${target.slice(0, 10)}` }).click()
    await page.locator('.diff').getByText('3 to add, 2 to remove').waitFor() // SOA, x TXT, mail A back
    await screenshot(page, 'history-rollback-preview')
    await page
      .locator('.plan')
      .getByRole('button', { name: /^Roll back to/ })
      .click()
    await page.getByText(/rolled back to the content of/).waitFor()
    assert.deepEqual(await served(h, `mail.${ZONE}`, 'A'), ['192.0.2.25'])
    assert.ok(((await served(h, ZONE, 'SOA'))[0] as number) > before, 'the serial moves forward')
    await page.getByRole('cell', { name: 'console:tester' }).first().waitFor()
    await screenshot(page, 'history')
  })

  test('keyboard: Enter opens the inline editor on the records, Escape closes it and returns focus', async () => {
    await page.goto(`${h.consoleBase}/console/#/zones/${ZONE}`)
    const edit = page.getByRole('button', { name: 'Edit www A' })
    await edit.focus()
    await page.keyboard.press('Enter')
    const records = page.getByLabel('Records of www A, one per line')
    await records.waitFor()
    assert.equal(await records.evaluate((el) => el === document.activeElement), true)
    await page.keyboard.press('Escape')
    await records.waitFor({ state: 'detached' })
    assert.equal(await edit.evaluate((el) => el === document.activeElement), true)
  })

  test('the RRset table keeps its rows whole: the actions cell is a table cell as tall as its row', async () => {
    await page.goto(`${h.consoleBase}/console/#/zones/${ZONE}`)
    const row = page.locator('table.rrsets tbody tr', { hasText: 'www' })
    await row.getByRole('button', { name: 'Edit www A' }).waitFor()
    const [cell, tr] = await Promise.all([row.locator('td.row-actions').boundingBox(), row.boundingBox()])
    assert.ok(cell && tr && Math.abs(cell.y + cell.height - (tr.y + tr.height)) <= 1, JSON.stringify({ cell, tr }))
  })

  test('keyboard: the skip link moves to the content and stays on the view', async () => {
    await page.goto(`${h.consoleBase}/console/#/zones/${ZONE}`)
    await page.getByRole('button', { name: 'Edit www A' }).waitFor()
    const skip = page.getByRole('link', { name: 'Skip to content' })
    await skip.focus()
    assert.ok(await skip.isVisible(), 'visible while focused')
    await page.keyboard.press('Enter')
    // The click handler moves the focus; a fragment navigation it failed to prevent would have
    // changed the address by then (the link's default action runs right after its handlers).
    await page.waitForFunction(() => document.activeElement?.id === 'main')
    assert.equal(new URL(page.url()).hash, `#/zones/${ZONE}`, 'still on the zone')
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'main')
    await page.getByRole('button', { name: 'Edit www A' }).waitFor()
  })

  test('a phone-sized screen keeps every part reachable', async () => {
    const phone = await signedInPage(browser, h, { width: 390, height: 844 })
    // Zone list and RRsets without their column headings: each number says what it is.
    const headingOf = (cell: ReturnType<Page['locator']>) =>
      cell.evaluate((td) => getComputedStyle(td, '::before').content)
    const zoneRow = phone.locator('table.zones tbody tr', { hasText: ZONE })
    assert.deepEqual(await Promise.all([2, 3, 4, 5].map((i) => headingOf(zoneRow.locator(`td:nth-child(${i})`)))), [
      '"Role "',
      '"Serial "',
      '"Records "',
      '"Revision "',
    ])
    await screenshot(phone, 'zones-phone')
    await phone.getByRole('link', { name: ZONE }).click()
    await phone.getByRole('button', { name: 'Edit www A' }).waitFor()
    assert.equal(
      await headingOf(phone.locator('table.rrsets tbody tr', { hasText: 'www' }).locator('td.ttl')),
      '"TTL "',
    )
    await screenshot(phone, 'rrsets-phone')
    // History and audit: each row a block, each value beside its heading; nothing scrolls sideways.
    await phone.getByRole('link', { name: 'History and rollback' }).click()
    await phone
      .getByRole('button', { name: /^Roll back to/ })
      .first()
      .waitFor()
    await phone.getByRole('cell', { name: 'console:tester' }).first().waitFor()
    await screenshot(phone, 'history-phone')
    for (const name of ['history', 'audit']) {
      const fits = await phone
        .locator(`table.${name}`)
        .evaluate((t) => t.scrollWidth <= t.clientWidth && t.getBoundingClientRect().right <= window.innerWidth)
      assert.ok(fits, `the ${name} table fits a phone screen`)
    }
    const label = await phone
      .locator('table.audit td')
      .first()
      .evaluate((td) => getComputedStyle(td, '::before').content)
    assert.equal(label, '"When"', "a value is shown beside its column's heading")
    assert.deepEqual(pageProblems(phone), [])
  })

  test('query analytics in the default aggregate mode: no recent queries, and the page says why', async () => {
    await page.getByRole('link', { name: 'Queries' }).click()
    await page.getByText(/Aggregate privacy mode: clients are shown as their network/).waitFor()
    await page.getByText('No queries in this range.').first().waitFor()
    assert.equal(await page.getByRole('heading', { name: 'Recent queries' }).count(), 0)
  })

  test('keyboard: a rollback plan takes the focus; Escape or Cancel closes it, the focus returns to its button', async () => {
    await page.goto(`${h.consoleBase}/console/#/zones/${ZONE}/history`)
    const rollback = page.getByRole('button', { name: /^Roll back to/ }).first()
    const name = (await rollback.getAttribute('aria-label'))!
    const focused = () => page.evaluate(() => document.activeElement?.textContent?.trim() ?? '')
    const focusedLabel = () => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))
    const plan = page.getByRole('group', { name: 'Dry run' })
    // Escape.
    await rollback.focus()
    await page.keyboard.press('Enter')
    await plan.getByRole('button', { name }).waitFor()
    assert.equal(await focused(), name, 'the focus moves to the commit button')
    await page.keyboard.press('Escape')
    await plan.waitFor({ state: 'detached' })
    assert.equal(await focusedLabel(), name, 'back on the button that opened it')
    // Tab to Cancel, Enter.
    await page.keyboard.press('Enter')
    await plan.getByRole('button', { name }).waitFor()
    await page.keyboard.press('Tab')
    assert.equal(await focused(), 'Cancel')
    await page.keyboard.press('Enter')
    await plan.waitFor({ state: 'detached' })
    assert.equal(await focusedLabel(), name)
    // Committed from the keyboard: the page redraws, the focus lands on the same row's button.
    await page.keyboard.press('Enter')
    await plan.getByRole('button', { name }).waitFor()
    await page.keyboard.press('Enter')
    await page.getByText(/rolled back to the content of/).waitFor()
    assert.equal(await focusedLabel(), name)
  })

  test('keyboard: deleting a zone asks in a modal dialog; Escape cancels, typing the name confirms', async () => {
    const GONE = 'gone.test'
    const put = await h.call('PUT', `/v1/zones/${GONE}`, {
      role: 'primary',
      zone_text: `$ORIGIN ${GONE}.\n@ 3600 IN SOA ns1 hostmaster 1 3600 900 604800 300\n@ 3600 IN NS ns1\nns1 3600 IN A 192.0.2.1\n`,
    })
    assert.equal(put.status, 201)
    await page.goto(`${h.consoleBase}/console/#/zones/${GONE}`)
    const trigger = page.getByRole('button', { name: 'Delete zone…' })
    const dialog = page.getByRole('dialog', { name: `Delete ${GONE}?` })
    const input = dialog.getByLabel(`Type ${GONE} to confirm`)
    const inDialog = () => page.evaluate(() => !!document.activeElement?.closest('dialog[open]'))
    await trigger.focus()
    await page.keyboard.press('Enter')
    await input.waitFor()
    assert.equal(await input.evaluate((el) => el === document.activeElement), true, 'the focus moves into the dialog')
    assert.equal(await dialog.getByRole('button', { name: 'Delete zone' }).isDisabled(), true)
    // The page behind is inert: Tab goes round the dialog's own controls.
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab')
      assert.equal(await inDialog(), true, `Tab ${i + 1} stays in the dialog`)
    }
    await screenshot(page, 'zone-delete-dialog')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    assert.equal(await trigger.evaluate((el) => el === document.activeElement), true, 'back on Delete zone…')
    assert.equal((await h.call('GET', `/v1/zones/${GONE}`)).status, 200, 'Escape deleted nothing')
    // A wrong name confirms nothing; the right one and Enter delete the zone.
    await page.keyboard.press('Enter')
    await input.waitFor()
    await page.keyboard.type('gone.tes')
    await page.keyboard.press('Enter')
    assert.equal(await dialog.isVisible(), true, 'Enter with a wrong name keeps the dialog open')
    await page.keyboard.type('t')
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Zones' }).waitFor()
    assert.equal((await h.call('GET', `/v1/zones/${GONE}`)).status, 404)
  })

  test('dark mode: every main screen is readable (WCAG AA contrast), on a laptop and a phone', async () => {
    const dark = await signedInPage(browser, h)
    // Each screen's name, address, heading and what shows that its data has arrived.
    const screens: [string, string, string, string][] = [
      ['zones', '#/zones', 'Zones', 'table.zones'],
      ['rrsets', `#/zones/${ZONE}`, ZONE, 'table.rrsets tbody tr'],
      ['history', `#/zones/${ZONE}/history`, `History of ${ZONE}`, 'table.audit'],
      ['blocklists', '#/blocklists', 'Blocklists', '#health-title'],
      ['metrics', '#/metrics', 'Metrics history', 'figure.chart-card'],
      ['analytics', '#/analytics', 'Query analytics', '.stats'],
      ['ha', '#/ha', 'HA status', '.peers > *'],
      ['provider', '#/provider', 'External DNS provider', '.view :is([role=alert]:not([hidden]), p.muted, table)'],
    ]
    const unreadable: string[] = []
    for (const scheme of ['light', 'dark'] as const) {
      await dark.emulateMedia({ colorScheme: scheme })
      for (const viewport of [
        { width: 1280, height: 800 },
        { width: 390, height: 844 },
      ]) {
        await dark.setViewportSize(viewport)
        for (const [name, hash, heading, loaded] of screens) {
          await dark.goto(`${h.consoleBase}/console/${hash}`)
          await dark.getByRole('heading', { name: heading, exact: true }).waitFor()
          await dark.locator(loaded).first().waitFor()
          if (name === 'rrsets') {
            // The dry-run diff's colours too.
            await dark.getByRole('button', { name: 'Edit www A' }).click()
            await dark.getByRole('button', { name: 'Preview' }).first().click()
            await dark.locator('.diff').waitFor()
          }
          for (const problem of await lowContrast(dark))
            unreadable.push(`${scheme} ${name} ${viewport.width}px: ${problem}`)
          if (scheme === 'dark') await screenshot(dark, `dark-${name}${viewport.width < 600 ? '-phone' : ''}`)
        }
      }
    }
    assert.deepEqual(unreadable, [])
    assert.deepEqual(pageProblems(dark), [])
    await dark.close()
  })

  test('a browser sent to an address the console lacks gets its 404 page; API clients keep the JSON', async () => {
    const missing = '/console/no-such-page/%3Cscript%3Ealert(1)%3C%2Fscript%3E?q=%22%3E%3Cb%3E'
    for (const [viewport, scheme, name] of [
      [{ width: 1280, height: 800 }, 'light', 'not-found'],
      [{ width: 390, height: 844 }, 'light', 'not-found-phone'],
      [{ width: 1280, height: 800 }, 'dark', 'dark-not-found'],
    ] as const) {
      await page.setViewportSize(viewport)
      await page.emulateMedia({ colorScheme: scheme })
      const res = await page.goto(`${h.consoleBase}${missing}`)
      assert.equal(res?.status(), 404)
      assert.match(res!.headers()['content-type'] ?? '', /^text\/html/)
      assert.match(res!.headers()['content-security-policy'] ?? '', /script-src 'self'/)
      await page.getByRole('heading', { name: 'Page not found' }).waitFor()
      assert.equal(await page.title(), 'Page not found · dnsctl console')
      // In the console's shell (its stylesheet applied: the header bar), the address not echoed.
      assert.equal(await page.locator('header.top').evaluate((el) => getComputedStyle(el).display), 'flex')
      const html = await res!.text()
      assert.ok(!/no-such-page|script|alert/i.test(html.replace(/<link[^>]*>|<\/?(html|head|body)[^>]*>/g, '')), html)
      assert.deepEqual(await lowContrast(page), [], `${scheme} ${viewport.width}px`)
      await screenshot(page, name)
    }
    await page.setViewportSize({ width: 1280, height: 860 })
    await page.emulateMedia({ colorScheme: 'light' })
    // Keyboard: the way back is a link, and it leads into the console (still signed in).
    const back = page.getByRole('link', { name: 'Go to the console' })
    await back.focus()
    await page.keyboard.press('Enter')
    await page.getByRole('link', { name: ZONE }).waitFor()
    // Signed out (a fresh browser): the same page, not a sign-in error.
    const stranger = await (await browser.newContext()).newPage()
    const res = await stranger.goto(`${h.consoleBase}/nowhere`)
    assert.equal(res?.status(), 404)
    await stranger.getByRole('heading', { name: 'Page not found' }).waitFor()
    await stranger.close()
    // The API keeps its coded JSON: fetch() from the page, a navigation to an API path, and any
    // browser on the API listener (which has no console).
    const fetched = await page.evaluate(async () => {
      const r = await fetch('/v1/no-such-route')
      return { status: r.status, type: r.headers.get('content-type'), body: await r.json() }
    })
    assert.equal(fetched.status, 404)
    assert.match(fetched.type ?? '', /^application\/json/)
    assert.equal(fetched.body.error.code, 'not_found')
    const navigated = await page.goto(`${h.consoleBase}/v1/no-such-route`)
    assert.equal(navigated?.status(), 404)
    assert.equal(JSON.parse(await navigated!.text()).error.code, 'not_found')
    const api = await fetch(`${h.base}/console/nowhere`, { headers: { accept: 'text/html,*/*;q=0.8' } })
    assert.equal(api.status, 404)
    assert.equal(((await api.json()) as { error: { code: string } }).error.code, 'not_found')
    const apiMiss = await fetch(`${h.base}/nowhere`, { headers: { accept: 'text/html' } })
    assert.equal(apiMiss.status, 404)
    assert.match(apiMiss.headers.get('content-type') ?? '', /^application\/json/)
    await page.goto(`${h.consoleBase}/console/#/zones`)
    await page.getByRole('link', { name: ZONE }).waitFor()
  })

  test('signing out ends the session here and in every other tab', async () => {
    const other = await page.context().newPage()
    await other.goto(`${h.consoleBase}/console/#/zones`)
    await other.getByRole('link', { name: ZONE }).waitFor()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByText('Signed out.').waitFor()
    await other.getByRole('link', { name: ZONE }).click()
    await other.getByText(/Your console session ended/).waitFor()
    assert.equal((await fetch(`${h.consoleBase}/v1/zones`)).status, 401)
    await other.close()
  })

  test('no script errors or CSP violations on the way', () => {
    assert.deepEqual(pageProblems(page), [])
  })
})
