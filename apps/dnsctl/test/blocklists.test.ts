import assert from 'node:assert/strict'
import { readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { AppError } from '@gatehouse/kit'
import fc from 'fast-check'
import { normaliseConfig } from '../src/blocklists/service.ts'
import { type Harness, json, startHarness } from './helpers.ts'

describe('blocklist configuration', () => {
  let h: Harness
  before(async () => {
    h = await startHarness()
  })
  after(() => h.close())

  const get = async () => {
    const res = await h.call('GET', '/v1/blocklists/config')
    assert.equal(res.status, 200)
    const body = await json(res)
    assert.equal(res.headers.get('etag'), `"${body.revision}"`)
    return body
  }

  test('starts empty; PUT normalises, de-duplicates, sorts and publishes the three files atomically', async () => {
    const empty = await get()
    assert.deepEqual([empty.sources, empty.allow, empty.deny], [[], [], []])
    const res = await h.call(
      'PUT',
      '/v1/blocklists/config',
      {
        sources: [
          'https://lists.example.net/b.txt',
          'HTTPS://Lists.Example.net/a.txt#frag',
          'https://lists.example.net/b.txt',
        ],
        allow: ['Good.Example.', 'good.example', 'ok.example'],
        deny: ['ads.example', 'Tracker.Example'],
      },
      { 'if-match': `"${empty.revision}"` },
    )
    const body = await json(res)
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.deepEqual(body.sources, ['https://lists.example.net/a.txt', 'https://lists.example.net/b.txt'])
    assert.deepEqual(body.allow, ['good.example', 'ok.example'])
    assert.deepEqual(body.deny, ['ads.example', 'tracker.example'])
    assert.equal(body.published, true)
    assert.equal(res.headers.get('etag'), `"${body.revision}"`)
    const dir = h.config.blocklistDir
    assert.match(readlinkSync(join(dir, 'current')), /^gen-/)
    assert.equal(readFileSync(join(dir, 'current', 'sources.list'), 'utf8'), `${body.sources.join('\n')}\n`)
    assert.equal(readFileSync(join(dir, 'current', 'allow.list'), 'utf8'), 'good.example\nok.example\n')
    assert.equal(readFileSync(join(dir, 'current', 'deny.list'), 'utf8'), 'ads.example\ntracker.example\n')
    const again = await get()
    assert.equal(again.revision, body.revision)
    const cached = await h.call('GET', '/v1/blocklists/config', undefined, { 'if-none-match': `"${body.revision}"` })
    assert.equal(cached.status, 304)
  })

  test('dry run validates only', async () => {
    const current = await get()
    const res = await h.call('PUT', '/v1/blocklists/config', {
      sources: [],
      allow: [],
      deny: ['x.example'],
      dry_run: true,
      expected_revision: current.revision,
    })
    const body = await json(res)
    assert.equal(res.status, 200)
    assert.equal(body.published, false)
    assert.deepEqual(body.deny, ['x.example'])
    assert.deepEqual(await get(), current)
  })

  test('refusals: 428, 412, non-HTTPS, more than 32 sources, bad domains, unknown fields; nothing stored', async () => {
    const current = await get()
    const ok = { sources: [], allow: [], deny: [] }
    const cases: [unknown, Record<string, string> | null, number, string, RegExp?][] = [
      [ok, null, 428, 'revision_required'],
      [ok, { 'if-match': '"old"' }, 412, 'revision_mismatch'],
      // One revision is named: "*" and lists are refused, not read as a revision never current.
      [
        ok,
        { 'if-match': '*' },
        400,
        'invalid_request',
        /If-Match must name one revision .* \* and lists are not supported/,
      ],
      [ok, { 'if-match': `"${current.revision}", "old"` }, 400, 'invalid_request', /not supported/],
      [{ ...ok, sources: ['http://lists.example.net/a'] }, {}, 400, 'invalid_blocklist_source', /must use HTTPS/],
      [{ ...ok, sources: ['ftp://x'] }, {}, 400, 'invalid_blocklist_source'],
      [{ ...ok, sources: ['not a url'] }, {}, 400, 'invalid_blocklist_source', /not an absolute URL/],
      [{ ...ok, sources: ['https://user:pw@x.example/'] }, {}, 400, 'invalid_blocklist_source', /credentials/],
      [
        { ...ok, sources: Array.from({ length: 33 }, (_, i) => `https://l.example/${i}`) },
        {},
        400,
        'too_many_blocklist_sources',
        /33 blocklist sources given; at most 32/,
      ],
      [{ ...ok, deny: ['bad domain'] }, {}, 400, 'invalid_domain', /deny\[0\]/],
      [{ ...ok, allow: ['*.wild.example'] }, {}, 400, 'invalid_domain'],
      [{ ...ok, allow: [''] }, {}, 400, 'invalid_domain'],
      [{ ...ok, extra: 1 }, {}, 400, 'invalid_request', /unknown field "extra"/],
      [{ sources: [] }, {}, 400, 'invalid_request'],
    ]
    for (const [body, headers, status, code, message] of cases) {
      const res = await h.call(
        'PUT',
        '/v1/blocklists/config',
        body,
        headers === null ? {} : { 'if-match': `"${current.revision}"`, ...headers },
      )
      const out = await json(res)
      assert.equal(res.status, status, JSON.stringify(out))
      assert.equal(out.error.code, code)
      if (message) assert.match(out.error.message, message)
    }
    // 32 distinct sources (after de-duplication) are fine in a dry run.
    const res = await h.call(
      'PUT',
      '/v1/blocklists/config',
      {
        ...ok,
        dry_run: true,
        sources: [...Array.from({ length: 32 }, (_, i) => `https://l.example/${i}`), 'https://l.example/0'],
      },
      { 'if-match': `"${current.revision}"` },
    )
    assert.equal(res.status, 200)
    assert.deepEqual(await get(), current)
  })

  test('normalisation never crashes and is idempotent', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.webUrl(), fc.string()), { maxLength: 40 }),
        fc.array(fc.oneof(fc.domain(), fc.string()), { maxLength: 20 }),
        (sources, domains) => {
          try {
            const once = normaliseConfig({ sources, allow: domains, deny: [] })
            assert.deepEqual(normaliseConfig(once), once)
            assert.ok(once.sources.length <= 32)
          } catch (err) {
            assert.ok(err instanceof AppError && err.statusCode === 400, String(err))
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
