/**
 * A TLS gate's sightings in the web candidate report, as a gate uploads them: each upload of an
 * entry carries its newest sightings, most already stored. Only the new ones are recorded (in
 * the merge's transaction, against the stored lists as read before the merge), and none is lost: not when an upload repeats stored ones, not when a page
 * is sent again, not when the stored list is one the merge cannot read without decoding.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openEdgeDatabase } from '../src/db/open.ts'
import {
  call,
  DIALECTS,
  type Edgegate,
  fileServices,
  newDatabase,
  observation,
  seed,
  startEdgegate,
} from './helpers.ts'

const { pg, tls } = fileServices()
const FP = 't13d1516h2_ffff'
const T = Date.now() - 10 * 60_000
const iso = (ms: number) => new Date(ms).toISOString()

/** Sighting j of the gate's history: its own port, j seconds after T, from one of three addresses. */
const sighting = (j: number) => ({ ip: `192.0.2.${(j % 3) + 1}`, port: 30_000 + j, last_seen: iso(T + j * 1000) })

/** The entry as a gate uploads it: sightings `from`..`to` (inclusive), newest first. */
function entry(from: number, to: number) {
  const sightings = Array.from({ length: to - from + 1 }, (_, k) => sighting(to - k))
  return observation(FP, {
    first_seen: iso(T),
    last_seen: iso(T + to * 1000),
    ips: ['192.0.2.1', '192.0.2.2', '192.0.2.3'],
    ports: [443],
    sightings,
    count: to + 1,
    metadata: { sni: 'shop.example', ja4: FP },
  })
}

for (const dialect of DIALECTS) {
  describe(`TLS gate sightings on ${dialect}`, () => {
    let gate: Edgegate
    let url: string
    let token: string
    before(async () => {
      url = await newDatabase(dialect, pg.get)
      const { tokens } = await seed(url, [{ id: 'tls-1', kind: 'tlsgate' }])
      token = tokens['tls-1']!
      gate = await startEdgegate(url, tls)
    })
    after(() => gate?.stop())

    const upload = async (observations: unknown[]) => {
      const res = await call(tls, gate.base, '/v1/observations/batch?instance_id=tls-1', {
        token,
        body: { instance_id: 'tls-1', observations },
      })
      assert.equal(res.status, 200, JSON.stringify(res.body))
    }
    const recorded = async () => {
      const d = await openEdgeDatabase(url, 1)
      try {
        const rows = await d.db
          .selectFrom('web_sightings')
          .select(['ip', 'port', 'seen_ms', 'host'])
          .where('instance_id', '=', 'tls-1')
          .where('fingerprint', '=', FP)
          .orderBy('seen_ms')
          .execute()
        return rows.map((r) => `${r.ip}|${r.port}|${Number(r.seen_ms)}|${r.host}`)
      } finally {
        await d.close()
      }
    }
    const expected = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, k) => {
        const s = sighting(from + k)
        return `${s.ip}|${s.port}|${Date.parse(s.last_seen)}|shop.example`
      })

    test('every sighting of every upload is recorded once, whatever each upload repeats', async () => {
      await upload([entry(0, 127)])
      assert.deepEqual(await recorded(), expected(0, 127))
      // The steady state: the gate's 128 newest, 4 new.
      await upload([entry(4, 131)])
      assert.deepEqual(await recorded(), expected(0, 131))
      // The same page again (a retry), then a short one.
      await upload([entry(4, 131)])
      assert.deepEqual(await recorded(), expected(0, 131))
      await upload([entry(130, 135)])
      assert.deepEqual(await recorded(), expected(0, 135))
      // Twice in one page, overlapping.
      await upload([entry(120, 140), entry(136, 141)])
      assert.deepEqual(await recorded(), expected(0, 141))
      // Sightings the stored list no longer holds (it keeps the 128 newest), and one older than
      // all of them that was never sent: the stored list is decoded, the old one recorded.
      const late = { ip: '192.0.2.9', port: 29_000, last_seen: iso(T - 5000) }
      const withLate = entry(0, 141)
      withLate.sightings = [...entry(138, 141).sightings, ...entry(0, 3).sightings, late]
      await upload([withLate])
      assert.deepEqual(await recorded(), [`192.0.2.9|29000|${T - 5000}|shop.example`, ...expected(0, 141)])
    })
  })
}
