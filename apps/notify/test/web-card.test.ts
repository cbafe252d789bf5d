/**
 * Every native card v1 component as the web client draws it (Debian's Chromium against a real
 * notify, SQLite and PostgreSQL): title, summary, severity, source, metrics, rows with tags
 * and emphasis, labeled fields, tone-limited badges, lazy-loaded images with their alternative
 * text, safe links, registered actions (disabled for a viewer) and row views (source and
 * cross-list), all from data, never as HTML; in light and dark mode. The image is answered by
 * the browser context itself (no request leaves the machine). Screenshots go to test-output/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { unreadableText } from '@gatehouse/testkit'
import { signIn } from './browser.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, member, reader, startNotify } from './helpers.ts'

const OUT = join(import.meta.dirname, '..', 'test-output')
mkdirSync(OUT, { recursive: true })
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)
const HTML = '<img src=x onerror=alert(1)>'
// An unbroken value (a digest, a token, a long URL) must wrap inside the card.
const DIGEST = `sha256:${'9f86d081884c7d65'.repeat(12)}`

for (const backend of backends) {
  test(`every card component is drawn from data (${backend.name})`, async (t) => {
    const n = await startNotify(backend)
    t.after(() => n.close())
    const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    const ops = await channel(n, admin, 'ops')
    await reader(n, admin, 'vera')
    await member(n, admin, 'ops', 'vera', 'viewer')

    const vera = await signIn(n, 'vera', 'vera-password-123')
    t.after(() => vera.close())
    const images: string[] = []
    await vera.context.route('https://images.invalid/**', (route) => {
      images.push(route.request().url())
      return route.fulfill({ status: 200, contentType: 'image/png', body: PNG })
    })
    // The card arrives live, after the image route is in place.
    const res = await n.client.post('/api/v1/notifications', {
      token: ops.token,
      body: {
        version: 1,
        title: `Checkout latency ${HTML}`,
        summary: `p99 above the objective ${HTML}`,
        severity: 'warning',
        source: 'grafana',
        metrics: [
          { label: 'p99', value: '830 ms' },
          { label: 'error rate', value: 2.5 },
        ],
        rows: [
          { primary: 'eu-west-1', secondary: 'primary region', tags: ['canary', HTML], emphasis: 'strong' },
          { primary: 'us-east-1' },
        ],
        fields: [
          { label: 'service', value: `checkout ${HTML}` },
          { label: 'image digest', value: DIGEST },
        ],
        badges: [
          { text: 'SLO', tone: 'danger' },
          { text: 'paged', tone: 'info' },
          { text: 'plain' },
          { text: 'degraded', tone: 'warning' },
          { text: 'canary ok', tone: 'success' },
        ],
        images: [{ url: 'https://images.invalid/latency.png', alt: 'Latency graph of the last hour' }],
        links: [{ label: 'Dashboard', url: 'https://grafana.invalid/d/checkout' }],
        actions: [
          { type: 'registered', label: 'Scale out', target: 'scale' },
          { type: 'link', label: 'Runbook', url: 'https://runbooks.invalid/checkout' },
        ],
        views: [
          { type: 'source', title: 'From grafana', rows: [{ primary: 'panel 4', tags: ['p99'] }] },
          {
            type: 'cross-list',
            title: 'Also firing',
            rows: [{ primary: `payments ${HTML}`, secondary: 'prometheus', emphasis: 'strong' }],
          },
        ],
      },
    })
    assert.equal(res.status, 201, res.text)
    const { page } = vera
    const card = page.locator('li.card', { hasText: 'Checkout latency' })
    await card.waitFor()
    assert.equal(await card.locator('h2').textContent(), `Checkout latency ${HTML}`)
    assert.ok((await card.locator('p.body').textContent())?.includes(HTML), 'summary is text')
    await card.locator('.badge.sev-warning', { hasText: 'warning' }).waitFor()
    await card.locator('.meta', { hasText: 'grafana' }).waitFor()
    assert.deepEqual(await card.locator('.metrics > div').allTextContents(), ['p99830 ms', 'error rate2.5'])
    const rows = card.locator(':scope > ul.rows > li')
    assert.equal(await rows.count(), 2)
    assert.equal(await rows.first().getAttribute('class'), 'strong')
    assert.deepEqual(await rows.first().locator('.badge').allTextContents(), ['canary', HTML])
    assert.deepEqual(await card.locator('dl.fields dd').allTextContents(), [`checkout ${HTML}`, DIGEST])
    // Nothing widens the page: the long value wraps within the card, the card within the window.
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      window: document.documentElement.clientWidth,
      card: Math.round(document.querySelector('li.card')?.getBoundingClientRect().right ?? 0),
      value: Math.round(document.querySelectorAll('li.card dl.fields dd')[1]?.getBoundingClientRect().right ?? 0),
    }))
    assert.ok(widths.page <= widths.window, `no horizontal scrolling: ${JSON.stringify(widths)}`)
    assert.ok(widths.value <= widths.card && widths.card <= widths.window, JSON.stringify(widths))
    for (const [text, tone] of [
      ['SLO', 'danger'],
      ['paged', 'info'],
      ['plain', 'neutral'],
      ['degraded', 'warning'],
      ['canary ok', 'success'],
    ])
      await card.locator(`.badge.tone-${tone}`, { hasText: text }).waitFor()
    const img = card.getByRole('img', { name: 'Latency graph of the last hour' })
    assert.equal(await img.getAttribute('loading'), 'lazy')
    await page.waitForFunction(() => (document.querySelector('li.card img') as HTMLImageElement | null)?.complete)
    assert.deepEqual(images, ['https://images.invalid/latency.png'])
    for (const name of ['Dashboard', 'Runbook']) {
      assert.equal(await card.getByRole('link', { name }).getAttribute('rel'), 'noopener noreferrer')
    }
    assert.equal(await card.getByRole('button', { name: 'Scale out' }).isDisabled(), true, 'a viewer cannot run it')
    const source = card.getByRole('region', { name: 'From grafana' })
    assert.equal(await source.getAttribute('class'), 'view view-source')
    assert.deepEqual(await source.locator('li').allTextContents(), ['panel 4p99'])
    const cross = card.getByRole('region', { name: 'Also firing' })
    assert.equal(await cross.getAttribute('class'), 'view view-cross-list')
    assert.equal(await cross.locator('li.strong').textContent(), `payments ${HTML} — prometheus`)
    assert.equal(await page.locator('li.card img').count(), 1, 'the only image is the card image')
    await page.screenshot({ path: join(OUT, `card-components-${backend.name}.png`), fullPage: true })
    // The badges' small text in every tone, the severity's and the rest, in both schemes.
    assert.deepEqual(await unreadableText(page), [], 'light')
    await page.emulateMedia({ colorScheme: 'dark' })
    assert.deepEqual(await unreadableText(page), [], 'dark')
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    assert.notEqual(background, 'rgb(255, 255, 255)', `dark mode follows the system (${background})`)
    await page.screenshot({ path: join(OUT, `card-components-dark-${backend.name}.png`), fullPage: true })
    assert.deepEqual(vera.problems, [])
  })
}
