import assert from 'node:assert/strict'
import { rename, writeFile } from 'node:fs/promises'
import { after, before, describe, test } from 'node:test'
import { dnsQuery, EMPTY_RPZ, type Kresd, startKresd } from '../src/index.ts'

describe('startKresd', () => {
  let kresd: Kresd
  before(async () => {
    kresd = await startKresd({ instances: 2, rpz: `${EMPTY_RPZ}ads.example. CNAME .\n` })
  })
  after(() => kresd.stop())

  test('every instance answers on the shared port and its own, with the RPZ loaded', async () => {
    for (const port of [kresd.port, ...kresd.instances.map((i) => i.port)]) {
      assert.equal((await dnsQuery(port, 'ads.example', 'A')).rcode, 'NXDOMAIN', String(port))
    }
    assert.match(await kresd.kdig('ads.example', 'A'), /status: NXDOMAIN/)
  })

  test('renaming a new RPZ over one instance file reloads that instance only', async () => {
    const [first, second] = kresd.instances
    const tmp = `${first!.rpzFile}.new`
    await writeFile(tmp, `${EMPTY_RPZ}other.example. CNAME .\n`)
    await rename(tmp, first!.rpzFile)
    const deadline = Date.now() + 10_000
    while ((await dnsQuery(first!.port, 'other.example', 'A')).rcode !== 'NXDOMAIN') {
      if (Date.now() > deadline) throw new Error('instance 0 did not reload')
      await new Promise((r) => setTimeout(r, 20))
    }
    assert.notEqual((await dnsQuery(first!.port, 'ads.example', 'A')).rcode, 'NXDOMAIN')
    assert.equal((await dnsQuery(second!.port, 'ads.example', 'A')).rcode, 'NXDOMAIN')
    assert.notEqual((await dnsQuery(second!.port, 'other.example', 'A')).rcode, 'NXDOMAIN')
  })
})
