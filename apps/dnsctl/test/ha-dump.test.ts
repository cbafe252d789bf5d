/** Promotion reads knotd's dump of a zone: DNSSEC records of a signing primary are left out (knotd signs again). */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { withoutDnssec } from '../src/ha/zone-dump.ts'
import { parseZoneText } from '../src/zones/model.ts'

test('a signed dump parses once the DNSSEC records are left out', () => {
  const dump = `;; Zone dump (Knot DNS 3.2.6)
example.test.       	3600	SOA	ns1.example.test. hostmaster.example.test. 7 3600 900 604800 300
example.test.       	3600	NS	ns1.example.test.
example.test.       	3600	DNSKEY	257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==
example.test.       	3600	RRSIG	SOA 13 2 3600 20261209000000 20261125000000 12345 example.test. AAAA
example.test.       	300	NSEC	ns1.example.test. NS SOA RRSIG NSEC DNSKEY
ns1.example.test.   	3600	A	192.0.2.1
;; Written 6 records
`
  const zone = parseZoneText('example.test.', withoutDnssec(dump))
  assert.deepEqual(
    zone.records.map((r) => r.type),
    ['SOA', 'NS', 'A'],
  )
  assert.throws(() => parseZoneText('example.test.', dump))
})
