/**
 * The console's resolver views in Chromium against a real dnsctl + knotd + kresd: blocklist
 * configuration (validate, publish, a refused source), refresh health, metrics history charts
 * sampled from kresd's control socket, and query analytics from kresd's dnstap stream (detailed
 * privacy mode: recent queries shown). Screenshots go to apps/dnsctl/test-output/.
 */
import assert from 'node:assert/strict'
import { readFile, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  type Browser,
  dnsQuery,
  EMPTY_RPZ,
  type Kresd,
  type Page,
  startKresd,
  tempDir,
  waitFor,
} from '@gatehouse/testkit'
import { addDelta } from '../src/history/store.ts'
import {
  type ConsoleHarness,
  launchChromium,
  pageProblems,
  screenshot,
  signedInPage,
  startConsoleHarness,
} from './console-helpers.ts'
import { json } from './helpers.ts'

describe('console: blocklists, refresh health, metrics, query analytics', () => {
  let h: ConsoleHarness
  let kresd: Kresd
  let browser: Browser
  let page: Page
  const dir = tempDir('dnsctl-console-resolver-')
  const socketPath = join(dir.path, 'dnstap.sock')
  // dnsctl must listen on the dnstap socket before kresd starts, but kresd's control folder is
  // known only after: the sampler is pointed at a link that is made once kresd runs.
  const controlLink = join(dir.path, 'control')
  before(async () => {
    h = await startConsoleHarness({
      env: {
        DNSCTL_DNSTAP_SOCKET: socketPath,
        DNSCTL_ANALYTICS_PRIVACY: 'detailed',
        DNSCTL_RESOLVER_CONTROL_DIRS: controlLink,
        DNSCTL_RESOLVER_SAMPLE_INTERVAL: '1s',
      },
    })
    kresd = await startKresd({
      rpz: `${EMPTY_RPZ}ads.example. CNAME .\n`,
      extraConfig: `modules.load('dnstap')\ndnstap.config({ socket_path = '${socketPath}', client = { log_responses = true } })\n`,
    })
    await symlink(join(kresd.dir, 'instance-0', 'control'), controlLink)
    browser = await launchChromium()
    page = await signedInPage(browser, h)
  })
  after(async () => {
    await browser?.close()
    await kresd?.stop()
    await h?.close()
    dir.remove()
  })

  test('blocklists: validate normalises, a plain-HTTP source is refused, publish writes the files', async () => {
    await page.getByRole('link', { name: 'Blocklists' }).click()
    await page.getByRole('heading', { name: /Refresh health/ }).waitFor()
    // Nothing has run yet: health is never assumed.
    await page.getByText('unhealthy', { exact: true }).waitFor()
    await page
      .getByLabel('Sources (HTTPS URLs, at most 32)')
      .fill('https://lists.example/ads.txt\nhttps://lists.example/ads.txt')
    await page.getByLabel('Deny (always blocked)').fill('Tracker.Example.\nads.example')
    await page.getByRole('button', { name: 'Validate' }).click()
    await page.getByText(/Valid: 1 source, 0 allowed, 2 denied/).waitFor()
    assert.equal(await page.getByLabel('Deny (always blocked)').inputValue(), 'ads.example\ntracker.example')
    const before = await json(await h.call('GET', '/v1/blocklists/config'))
    assert.deepEqual(before.deny, [], 'validation publishes nothing')

    await page.getByLabel('Sources (HTTPS URLs, at most 32)').fill('http://lists.example/ads.txt')
    await page.getByRole('button', { name: 'Publish' }).click()
    await page
      .getByRole('alert')
      .getByText(/invalid_blocklist_source/)
      .waitFor()
    await screenshot(page, 'blocklists-refused')

    await page.getByLabel('Sources (HTTPS URLs, at most 32)').fill('https://lists.example/ads.txt')
    await page.getByRole('button', { name: 'Publish' }).click()
    await page.getByText(/Published; the resolvers get it/).waitFor()
    const after = await json(await h.call('GET', '/v1/blocklists/config'))
    assert.deepEqual(after.deny, ['ads.example', 'tracker.example'])
    assert.match(await readFile(join(h.config.blocklistDir, 'current', 'deny.list'), 'utf8'), /tracker\.example/)
    await screenshot(page, 'blocklists')
  })

  test('query analytics: totals, blocked share, rankings and recent queries from dnstap', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await dnsQuery(kresd.port, 'ads.example', 'A')).rcode, 'NXDOMAIN')
    await dnsQuery(kresd.port, 'other.test', 'AAAA')
    await waitFor('analytics', async () => {
      const body = await json(await h.call('GET', '/v1/query-analytics?range=1h&limit=5&recent=10'))
      assert.ok(body.totals.queries >= 4, JSON.stringify(body.totals))
      return true
    })
    await page.getByRole('link', { name: 'Queries' }).click()
    await page.getByText(/Detailed privacy mode/).waitFor()
    const top = page.locator('.ranking').filter({ hasText: 'Top domains' })
    await top.getByText('ads.example').waitFor()
    assert.match(await top.innerText(), /ads\.example\s+3 \(\d+%\)/)
    await page.getByRole('cell', { name: 'NXDOMAIN (blocked)' }).first().waitFor()
    assert.match(await page.locator('.stats').innerText(), /blocked share/)
    await page.getByRole('button', { name: '7d' }).click()
    assert.equal(await page.getByRole('button', { name: '7d' }).getAttribute('aria-pressed'), 'true')
    await page.getByText('ads.example').first().waitFor()
    await screenshot(page, 'analytics')
  })

  test('metrics history: four charts per range, from the sampled resolver counters', async () => {
    // The hour before this test, as the sampler would have stored it (one delta a minute) ...
    const now = Math.floor(Date.now() / 1000)
    // It stops two minutes short of now (the live sampler fills the current minute, so one step is
    // missing) and has a five-minute hole (the sampler was down): the first must not cut the
    // latest point off the line, the second must stay a gap.
    for (let m = 60; m >= 2; m--) {
      if (m >= 36 && m <= 40) continue
      const q = 600 + 400 * Math.sin(m / 6)
      await addDelta(h.db, now - m * 60, {
        seconds: 60,
        queries: Math.round(q),
        cached: Math.round(q * 0.7),
        nxdomain: Math.round(q * 0.05),
        cacheEntries: 5000 + m * 20,
      })
    }
    // ... and the live sampler's own points from kresd.
    for (let i = 0; i < 10; i++) await dnsQuery(kresd.port, `n${i}.example`, 'A')
    await waitFor('history', async () => {
      const body = await json(await h.call('GET', '/v1/metrics/history?range=1h'))
      return body.points.some((p: { time: string }) => Date.parse(p.time) >= (now - 60) * 1000)
    })
    await page.getByRole('link', { name: 'Metrics' }).click()
    const charts = page.locator('figure.chart-card')
    await charts.first().waitFor()
    assert.equal(await charts.count(), 4)
    for (const title of ['Query rate', 'Cache-hit ratio', 'NXDOMAIN rate', 'Cache entries']) {
      const chart = page.getByRole('img', { name: new RegExp(`^${title}: latest`) })
      await chart.waitFor()
      assert.ok((await chart.locator('polyline').count()) >= 1, title)
    }
    // The latest point is the end of the line, drawn with a marker, not a dot of its own.
    for (const title of ['Query rate', 'Cache entries']) {
      const chart = page.getByRole('img', { name: new RegExp(`^${title}: latest`) })
      const shape = await chart.evaluate((svg) => ({
        lines: [...svg.querySelectorAll('polyline')].map((l) => l.getAttribute('points')!.split(' ')),
        dots: svg.querySelectorAll('.dot').length,
        latest: svg.querySelector('.latest')?.getAttribute('d'),
      }))
      assert.equal(shape.lines.length, 2, `${title}: the five-minute hole splits the line in two`)
      assert.equal(shape.dots, 0, `${title}: no lone dots`)
      assert.equal(shape.latest, `M${shape.lines[1]!.at(-1)}h0`, `${title}: the latest marker ends the line`)
    }
    await screenshot(page, 'metrics')
    await page.getByRole('button', { name: '24h' }).click()
    await page.getByText(/points? of 15 min/).waitFor()
    await page.getByRole('button', { name: '7d' }).click()
    await page.getByText(/points? of 60 min/).waitFor()
    await screenshot(page, 'metrics-7d')
    // A phone: the charts stack and keep their labels.
    await page.setViewportSize({ width: 390, height: 844 })
    await page.getByRole('button', { name: '1h' }).click()
    await page.getByRole('img', { name: /^Query rate: latest/ }).waitFor()
    await screenshot(page, 'metrics-phone')
    await page.getByRole('link', { name: 'Queries' }).click()
    await page.getByText('Top domains').waitFor()
    await screenshot(page, 'analytics-phone')
    // Each recent query is a block that fits the screen: nothing to scroll sideways.
    const recent = page.locator('table.recent')
    assert.ok(
      await recent.evaluate((t) => t.scrollWidth <= t.clientWidth && t.scrollWidth <= window.innerWidth),
      'the recent queries fit a phone screen',
    )
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  test('no script errors or CSP violations on the way', () => {
    assert.deepEqual(pageProblems(page), [])
  })
})
