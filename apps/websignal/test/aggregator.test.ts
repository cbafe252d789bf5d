import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BUILTIN_PATTERN_DIR, compilePatterns, loadPatternLists } from '../src/detect/patterns.ts'
import { WindowAggregator } from '../src/detect/window.ts'
import type { LogRequest } from '../src/logs/request.ts'

const T0 = Date.UTC(2026, 10, 25, 8)
const req = (ip: string, target: string, status: number, timeMs = T0): LogRequest => ({
  ip,
  host: undefined,
  target,
  status,
  userAgent: 'ua',
  timeMs,
})

test('aggregator: one aggregate per (host, site, window, address) however the address is spelled', () => {
  const agg = new WindowAggregator(300_000, compilePatterns(loadPatternLists([BUILTIN_PATTERN_DIR])))
  assert.equal(agg.add(req('2001:DB8::1', '/a', 404), 'main', 'h', T0), '2001:db8::1')
  assert.equal(agg.add(req('2001:db8:0::1', '/b', 404), 'main', 'h', T0), '2001:db8::1')
  assert.equal(agg.add(req('2001:db8::1', '/.env', 404), 'main', 'h', T0), '2001:db8::1')
  agg.add(req('2001:DB8::1', '/a', 200), 'main', 'h', T0)
  // Another site, host and window are other aggregates; so is an address's first line after them.
  agg.add(req('2001:DB8::1', '/a', 200), 'blog', 'h', T0)
  agg.add(req('2001:DB8::1', '/a', 200), 'main', 'h2', T0)
  agg.add(req('2001:DB8::1', '/a', 200, T0 + 300_000), 'main', 'h', T0)
  agg.add(req('192.0.2.7', '/img/x.png', 404), 'main', 'h', T0)
  // Not an address: refused every time, never an aggregate.
  assert.equal(agg.add(req('not-an-ip', '/a', 200), 'main', 'h', T0), undefined)
  assert.equal(agg.add(req('not-an-ip', '/a', 200), 'main', 'h', T0), undefined)
  assert.equal(agg.size, 5)
  const out = agg.drain()
  assert.equal(out.length, 5)
  const main = out.find((a) => a.ip === '2001:db8::1' && a.site === 'main' && a.host === 'h' && a.windowStart === T0)
  assert.deepEqual(
    { ...main, paths: main?.paths.size },
    {
      host: 'h',
      site: 'main',
      ip: '2001:db8::1',
      windowStart: T0,
      requests: 4,
      errors: 3,
      successes: 1,
      nonStatic: 4,
      suspicious: 1,
      paths: 3,
      lastSeenMs: T0,
    },
  )
  const image = out.find((a) => a.ip === '192.0.2.7')
  assert.equal(image?.errors, 0, 'a static asset is not an error')
  assert.equal(image?.nonStatic, 0)
  assert.equal(agg.size, 0)
  assert.deepEqual(agg.drain(), [])
  // After a drain the same spelling starts a fresh aggregate.
  agg.add(req('2001:DB8::1', '/a', 200), 'main', 'h', T0)
  assert.equal(agg.drain()[0]?.requests, 1)
})

test('aggregator: a failed flush folded back merges with what arrived since, one aggregate per client', () => {
  const agg = new WindowAggregator(300_000, compilePatterns(loadPatternLists([BUILTIN_PATTERN_DIR])))
  agg.add(req('192.0.2.1', '/.env', 404), 'main', 'h', T0)
  agg.add(req('192.0.2.2', '/a', 200), 'main', 'h', T0)
  let failed = agg.drain()
  // Three failed ticks in a row, each with another line of the first client.
  for (let tick = 1; tick <= 3; tick++) {
    agg.add(req('192.0.2.1', `/p${tick}`, 404, T0 + tick), 'main', 'h', T0)
    agg.restore(failed)
    assert.equal(agg.size, 2, 'one aggregate per client, however many ticks failed')
    failed = agg.drain()
  }
  const first = failed.find((a) => a.ip === '192.0.2.1')!
  assert.deepEqual(
    [first.requests, first.errors, first.suspicious, first.paths.size, first.lastSeenMs],
    [4, 4, 1, 4, T0 + 3],
  )
  assert.equal(failed.find((a) => a.ip === '192.0.2.2')?.requests, 1)
})

test('patterns: a query string hides no probe and makes no probe; the lists that ask for it see the query', () => {
  const agg = new WindowAggregator(300_000, compilePatterns(loadPatternLists([BUILTIN_PATTERN_DIR])))
  const suspicious = (target: string) => {
    agg.add(req('192.0.2.9', target, 404), 'main', 'h', T0)
    return agg.drain()[0]!.suspicious === 1
  }
  // Anchored at the end of the path: `?x=1` used to hide them.
  assert.equal(suspicious('/.env?x=1'), true)
  assert.equal(suspicious('/.git/config?'), true)
  assert.equal(suspicious('/shell.php?cmd=id'), true)
  assert.equal(suspicious('/wp-content/plugins/akismet/readme.txt?ver=1'), true)
  assert.equal(suspicious('/%2eenv?x=1'), true)
  // Traversal and injection lists see the decoded query.
  assert.equal(suspicious('/index.php?page=..%2f..%2fetc%2fpasswd'), true)
  assert.equal(suspicious('/api?cmd=whoami'), true)
  assert.equal(suspicious('/search?q=%24%7Bjndi:ldap://x%7D'), true)
  // A query that mentions a sensitive name is an ordinary search, not a probe.
  assert.equal(suspicious('/search?q=.env'), false)
  assert.equal(suspicious('/docs?page=backup.sql'), false)
  assert.equal(suspicious('/products?sort=price'), false)
})

test('patterns: a site list opts in to the query with its directive line', async () => {
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs')
  const { join } = await import('node:path')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(join(tmpdir(), 'websignal-patterns-'))
  try {
    writeFileSync(join(dir, 'site-path.txt'), '# path only\n(^|/)internal-report$\n')
    writeFileSync(join(dir, 'site-query.txt'), '#@match path+query\n[?&]debug=1\n')
    const lists = loadPatternLists([dir])
    assert.deepEqual(
      lists.map((l) => [l.name, l.withQuery]),
      [
        ['site-path', false],
        ['site-query', true],
      ],
    )
    const m = compilePatterns(lists)
    assert.equal(m.test('/internal-report', '/internal-report?x=1'), true)
    assert.equal(m.test('/a', '/a?next=/internal-report'), false)
    assert.equal(m.test('/a', '/a?debug=1'), true)
    assert.equal(compilePatterns([]).test('/.env', undefined), false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
