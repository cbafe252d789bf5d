import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { dnsQuery, startKnot } from '../src/index.ts'

const zone = (name: string, serial: number) => `$ORIGIN ${name}.
$TTL 300
@ IN SOA ns1.${name}. hostmaster.${name}. ${serial} 3600 600 86400 300
@ IN NS ns1.${name}.
ns1 IN A 192.0.2.53
www IN A 192.0.2.80
`

test('startKnot serves zones, reloads, adds zones at runtime and stops', async () => {
  const knot = await startKnot({ zones: { 'example.test': zone('example.test', 1) } })
  after(() => knot.stop())
  assert.equal(await knot.soaSerial('example.test'), 1)
  const www = await dnsQuery(knot.port, 'www.example.test', 'A')
  assert.equal(www.authoritative, true)
  assert.deepEqual(
    www.answers.map((a) => (a as { data: unknown }).data),
    ['192.0.2.80'],
  )

  const { writeFileSync } = await import('node:fs')
  writeFileSync(`${knot.zonesDir}/example.test.zone`, zone('example.test', 2))
  await knot.knotc('-b', 'zone-reload', 'example.test')
  assert.equal(await knot.soaSerial('example.test'), 2)
  assert.match(await knot.kdig('example.test', 'SOA', '+short'), / 2 3600 600 86400 300/)

  // A zone it does not serve is refused, then served once added.
  assert.equal((await dnsQuery(knot.port, 'new.test', 'SOA')).rcode, 'REFUSED')
  await knot.addZone('new.test', zone('new.test', 7))
  assert.equal(await knot.soaSerial('new.test'), 7)

  await assert.rejects(knot.knotc('zone-reload', 'absent.test'), /knotc zone-reload absent.test failed/)
  await knot.stop()
  await assert.rejects(dnsQuery(knot.port, 'example.test', 'SOA'), /no DNS answer|ECONNREFUSED/)
})
