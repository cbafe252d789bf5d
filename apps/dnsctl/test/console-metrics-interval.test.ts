/**
 * The metrics charts with a sampler slower than the range's step (--resolver-sample-interval 5m,
 * 1-minute steps over the hour): the samples are five minutes apart, and the line must join them
 * (it drew each one as a lone dot), breaking only where a sample is really missing. In Chromium,
 * light and dark; screenshots in apps/dnsctl/test-output/.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from '@gatehouse/testkit'
import { addDelta } from '../src/history/store.ts'
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

describe('console metrics with a sampler slower than the step', () => {
  let h: ConsoleHarness
  let browser: Browser
  let page: Page

  before(async () => {
    // No resolver to sample: the points are stored below as a five-minute sampler stores them.
    h = await startConsoleHarness({ env: { DNSCTL_RESOLVER_SAMPLE_INTERVAL: '5m' } })
    browser = await launchChromium()
    page = await signedInPage(browser, h)
  })
  after(async () => {
    await browser?.close()
    await h?.close()
  })

  test('1h: the line joins samples five minutes apart and breaks only where one is missing', async () => {
    const now = Math.floor(Date.now() / 1000)
    // A delta every five minutes for the last hour, 58 to 3 minutes ago (clear of the range's
    // start should the minute turn), one tick landing a minute late (past a bucket boundary),
    // and the one 28 minutes ago missing: the sampler was down for a tick, a ten-minute hole.
    for (let m = 58; m >= 3; m -= 5) {
      if (m === 28) continue
      const at = now - (m === 13 ? 12 : m) * 60
      const q = 600 + 400 * Math.sin(m / 9)
      await addDelta(h.db, at, {
        seconds: 300,
        queries: Math.round(q * 300),
        cached: Math.round(q * 300 * 0.7),
        nxdomain: Math.round(q * 300 * 0.05),
        cacheEntries: 5000 + m * 20,
      })
    }
    const body = await json(await h.call('GET', '/v1/metrics/history?range=1h'))
    assert.equal(body.step_seconds, 60)
    assert.equal(body.sample_seconds, 300)
    assert.equal(body.points.length, 11)

    await page.getByRole('link', { name: 'Metrics' }).click()
    await page.getByText("11 points of 1 min from the resolvers' counters, sampled every 5 min").waitFor()
    for (const title of ['Query rate', 'Cache-hit ratio', 'NXDOMAIN rate', 'Cache entries']) {
      const chart = page.getByRole('img', { name: new RegExp(`^${title}: latest`) })
      await chart.waitFor()
      const shape = await chart.evaluate((svg) => ({
        lines: [...svg.querySelectorAll('polyline')].map((l) => l.getAttribute('points')!.split(' ').length),
        dots: svg.querySelectorAll('.dot').length,
        latest: svg.querySelector('.latest')?.getAttribute('d'),
        lastPoint: [...svg.querySelectorAll('polyline')].at(-1)?.getAttribute('points')?.split(' ').at(-1),
      }))
      // 58..33 min ago (six samples), then 23..3 min ago (five): two lines, no lone dots.
      assert.deepEqual(shape.lines, [6, 5], `${title}: the missing sample alone splits the line`)
      assert.equal(shape.dots, 0, `${title}: no lone dots`)
      assert.equal(shape.latest, `M${shape.lastPoint}h0`, `${title}: the latest marker ends the line`)
    }
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      for (const viewport of [
        { width: 1280, height: 800 },
        { width: 390, height: 844 },
      ]) {
        await page.setViewportSize(viewport)
        await page.getByRole('img', { name: /^Query rate: latest/ }).waitFor()
        assert.deepEqual(await lowContrast(page), [], `${scheme} ${viewport.width}px`)
        await screenshot(page, `metrics-5m-sampler-${scheme}${viewport.width < 600 ? '-phone' : ''}`)
      }
    }
    await page.setViewportSize({ width: 1280, height: 860 })
    await page.emulateMedia({ colorScheme: 'light' })

    // The 6h range's steps are as long as the sampler's interval: nothing to explain.
    await page.getByRole('button', { name: '6h' }).click()
    await page.getByText(/^\d+ points? of 5 min from the resolvers' counters$/).waitFor()
  })

  test('no script errors or CSP violations on the way', () => {
    assert.deepEqual(pageProblems(page), [])
  })
})
