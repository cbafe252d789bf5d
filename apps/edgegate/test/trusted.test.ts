/**
 * Trusted-source discovery: CIDR files and HTTPS sources (redirects refused) become the
 * policy's trusted_ranges.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { freePort, tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { parseRangeDocument } from '../src/trusted/ranges.ts'
import { call, type Edgegate, makeTls, newDatabase, seed, startEdgegate } from './helpers.ts'

const tls = makeTls()

describe('trusted ranges', () => {
  let gate: Edgegate
  let token: string
  let source: ReturnType<typeof createServer>

  before(async () => {
    const port = await freePort()
    source = createServer({ cert: tls.server.cert, key: tls.server.key }, (req, res) => {
      if (req.url === '/published.json')
        return res.end(JSON.stringify({ prefixes: ['203.0.113.0/24', '2001:db8:1::/48'] }))
      if (req.url === '/moved') return res.writeHead(302, { location: `https://127.0.0.1:${port}/evil.txt` }).end()
      if (req.url === '/evil.txt') return res.end('0.0.0.0/0\n')
      res.writeHead(404).end()
    })
    await new Promise<void>((r) => source.listen(port, '127.0.0.1', r))
    const dir = tempDir('edgegate-ranges-')
    const file = join(dir.path, 'office.txt')
    writeFileSync(file, '# office\n198.51.100.0/24 # vpn\n\n192.0.2.7\n')
    const database = await newDatabase('sqlite', async () => {
      throw new Error('unused')
    })
    const seeded = await seed(database, [{ id: 'g', kind: 'sshgate' }])
    token = seeded.tokens.g!
    gate = await startEdgegate(database, tls, [
      '--trusted-ranges-file',
      file,
      '--trusted-ranges-url',
      `https://127.0.0.1:${port}/published.json`,
      '--trusted-ranges-url',
      `https://127.0.0.1:${port}/moved`,
      '--trusted-ranges-ca',
      tls.ca.caPath,
    ])
  })
  after(async () => {
    await gate?.stop()
    source?.close()
    tls.ca.remove()
  })

  test('files and HTTPS sources are merged; a redirecting source contributes nothing', async () => {
    const res = await call(tls, gate.base, '/v1/policy?instance_id=g', { token })
    assert.equal(res.status, 200)
    assert.deepEqual(res.body.trusted_ranges, ['192.0.2.7/32', '198.51.100.0/24', '2001:db8:1::/48', '203.0.113.0/24'])
    assert.ok(!res.body.trusted_ranges.includes('0.0.0.0/0'))
  })

  test('published range documents: any text gives ranges or a clear error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        try {
          for (const r of parseRangeDocument(text, 'src')) assert.match(r, /\/\d{1,3}$/)
        } catch (err) {
          assert.ok(err instanceof Error && err.message.length > 0)
        }
      }),
      { numRuns: 500 },
    )
  })
})
