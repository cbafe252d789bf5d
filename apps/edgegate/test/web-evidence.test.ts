/**
 * Ingest-time correlation (src/web/evidence.ts) against its definition, the join of
 * src/web/store.ts: whatever order signals, TLS sightings, pairings and retention sweeps come
 * in, the stored matches are exactly the ones the join finds. Also with signals and sightings
 * ingested concurrently (PostgreSQL: separate connections), and the migration's backfill. On
 * SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { openDatabase } from '@gatehouse/kit/db/database.ts'
import fc from 'fast-check'
import { sql } from 'kysely'
import { migrations } from '../src/db/migrations.ts'
import { type EdgeDatabase, openEdgeDatabase } from '../src/db/open.ts'
import type { DB } from '../src/db/schema.ts'
import { addNode } from '../src/nodes/service.ts'
import { sweepSignals } from '../src/observations/retention.ts'
import { candidatesOf, groupMatches } from '../src/web/candidates.ts'
import { correlate, evidenceMatches, groupedEvidence, hostRule, sweepEvidence } from '../src/web/evidence.ts'
import { addPair, removePair } from '../src/web/pair-store.ts'
import { buildReport } from '../src/web/service.ts'
import { sweepTlsSightings } from '../src/web/sightings.ts'
import { matchSignals } from '../src/web/store.ts'
import { DIALECTS, lazyPostgres, newDatabase } from './helpers.ts'
import { MIN, settings, sighting, signal } from './web-fixtures.ts'

const pg = lazyPostgres()
after(() => pg.stop())

const T = Date.parse('2026-05-01T12:00:00Z')
const WEB = ['web-1', 'web-2'] as const
const GATES = ['tls-1', 'tls-2'] as const
const IPS = ['198.51.100.7', '198.51.100.8', '203.0.113.9'] as const
const HOSTS = ['shop.example', 'blog.example', ''] as const
// Offsets that put signals and sightings exactly 5 minutes apart, and 1 ms beyond.
const at = fc.tuple(fc.integer({ min: 0, max: 6 }), fc.constantFrom(-1, 0, 1)).map(([k, e]) => T + k * 5 * MIN + e)

const op = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('signal' as const),
      node: fc.constantFrom(...WEB),
      ip: fc.constantFrom(...IPS),
      host: fc.constantFrom('shop.example', 'blog.example'),
      at,
      site: fc.constantFrom('a', 'b'),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('sighting' as const),
      gate: fc.constantFrom(...GATES),
      fp: fc.constantFrom('t13d_a', 't13d_b'),
      ip: fc.constantFrom(...IPS),
      host: fc.constantFrom(...HOSTS),
      at,
      // Recorded on its own, or in the merge of an uploaded observation (as ingest records them).
      via: fc.constantFrom('record' as const, 'merge' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constantFrom('pair' as const, 'unpair' as const),
      node: fc.constantFrom(...WEB),
      gate: fc.constantFrom(...GATES),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('sweep' as const), cutoff: at }) },
)

async function setup(dialect: (typeof DIALECTS)[number]): Promise<EdgeDatabase> {
  const d = await openEdgeDatabase(await newDatabase(dialect, pg.get), 4)
  for (const id of GATES) await addNode(d.db, id, 'tlsgate', { type: 'token' }, 'test')
  for (const id of WEB) await addNode(d.db, id, 'websignal', { type: 'token' }, 'test')
  return d
}

const line = (m: { gate: string; fingerprint: string; node: string; event_id: string }) =>
  `${m.gate}/${m.fingerprint}/${m.node}/${m.event_id}`

/**
 * The stored matches equal the join's, over all time; and the report's candidates, which the
 * database aggregates from them, equal the join's matches grouped in JavaScript, over all time
 * and over a window that cuts the data (the window's edges are inclusive).
 */
async function assertSameAsJoin(d: EdgeDatabase, what: string) {
  const stored = (await evidenceMatches(d.db, 0, Number.MAX_SAFE_INTEGER)).map(line).sort()
  const joined = await matchSignals(d.db, 0, Number.MAX_SAFE_INTEGER)
  assert.deepEqual(stored, joined.map(line).sort(), what)
  for (const [from, to] of [
    [0, Number.MAX_SAFE_INTEGER],
    [T + 5 * MIN, T + 15 * MIN],
  ] as const) {
    const grouped = candidatesOf(await groupedEvidence(d.db, d.kind, from, to))
    const inWindow = joined.filter((m) => m.observed_ms >= from && m.observed_ms <= to)
    assert.deepEqual(grouped, groupMatches(inWindow), `${what}: candidates over [${from}, ${to}]`)
  }
  return joined.length
}

for (const dialect of DIALECTS) {
  describe(`web evidence on ${dialect}`, () => {
    test('property: the stored matches are always the join’s matches', async () => {
      let matched = 0
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
          const d = await setup(dialect)
          try {
            for (const o of ops) {
              if (o.t === 'signal') await signal(d, o.node, o.ip, o.at, o.site, o.host)
              else if (o.t === 'sighting') await sighting(d, o.gate, o.fp, o.ip, o.at, o.host, o.via)
              else if (o.t === 'pair') await addPair(d.db, d.kind, o.node, o.gate, 'admin:prop')
              else if (o.t === 'unpair') {
                await removePair(d.db, d.kind, o.node, o.gate, 'admin:prop').catch((err) => {
                  if (err.code !== 'pair_not_found') throw err
                })
              } else if (o.t === 'sweep') {
                await sweepTlsSightings(d.db, o.cutoff)
                await sweepSignals(d.db, o.cutoff - 2 * MIN)
                await sweepEvidence(d.db, o.cutoff - 2 * MIN, o.cutoff)
              }
              matched += await assertSameAsJoin(d, `after ${JSON.stringify(o)}`)
            }
          } finally {
            await d.close()
          }
        }),
        {
          numRuns: dialect === 'sqlite' ? 60 : 20,
          // One sequence that must match, so the check below never depends on what the
          // random runs happened to draw (20 runs on PostgreSQL drew no match once in CI): a
          // sighting without SNI merged on a paired gate (only the pairing rule matches it),
          // and one recorded on its own (the host rule).
          examples: [
            [
              [
                { t: 'pair', node: 'web-1', gate: 'tls-1' },
                { t: 'signal', node: 'web-1', ip: '198.51.100.7', host: 'shop.example', at: T, site: 'a' },
                {
                  t: 'sighting',
                  gate: 'tls-1',
                  fp: 't13d_a',
                  ip: '198.51.100.7',
                  host: '',
                  at: T,
                  via: 'merge',
                },
                { t: 'signal', node: 'web-2', ip: '198.51.100.8', host: 'blog.example', at: T, site: 'b' },
                {
                  t: 'sighting',
                  gate: 'tls-2',
                  fp: 't13d_b',
                  ip: '198.51.100.8',
                  host: 'blog.example',
                  at: T,
                  via: 'record',
                },
              ],
            ],
          ],
        },
      )
      assert.ok(matched > 0, 'no sequence produced a match')
    })

    test('signals and sightings ingested concurrently are all correlated', async () => {
      const d = await setup(dialect)
      try {
        await addPair(d.db, d.kind, 'web-2', 'tls-2', 'admin:test')
        const work: Promise<unknown>[] = []
        for (let i = 0; i < 40; i++) {
          const ip = `192.0.2.${i}`
          work.push(signal(d, WEB[i % 2]!, ip, T + i))
          work.push(
            sighting(
              d,
              GATES[i % 2]!,
              `t13d_${i % 3}`,
              ip,
              T + i + 1000,
              'shop.example',
              i % 4 < 2 ? 'merge' : 'record',
            ),
          )
          work.push(sighting(d, 'tls-2', `t13d_nosni${i}`, ip, T + i - 1000, '', i % 3 === 0 ? 'merge' : 'record'))
        }
        await Promise.all(work)
        const n = await assertSameAsJoin(d, 'after concurrent ingest')
        // Every signal matched its host sighting; the web-2 ones also tls-2's SNI-less one.
        assert.equal(n, 40 + 20)
      } finally {
        await d.close()
      }
    })

    test('a report keeps the candidates with most signals, says it is truncated, and reads none outside its window', async () => {
      const d = await setup(dialect)
      try {
        // tls-1/t13d_a: 3 signals, tls-2/t13d_b: 2, tls-1/t13d_c: 1 (all in the window), and one
        // more t13d_c signal an hour later, outside it.
        for (const [gate, fp, ip, n] of [
          ['tls-1', 't13d_a', '192.0.2.1', 3],
          ['tls-2', 't13d_b', '192.0.2.2', 2],
          ['tls-1', 't13d_c', '192.0.2.3', 1],
        ] as const) {
          await sighting(d, gate, fp, ip, T)
          for (let i = 0; i < n; i++) await signal(d, 'web-1', ip, T + i)
        }
        await sighting(d, 'tls-1', 't13d_c', '192.0.2.3', T + 60 * MIN)
        await signal(d, 'web-1', '192.0.2.3', T + 60 * MIN)
        const interval = { fromMs: T - MIN, toMs: T + MIN, windowMs: 2 * MIN }
        const policy = { ...settings('enforce').policy, enabled: false }
        const top = await buildReport(d.db, d.kind, interval, policy, T, 2)
        assert.equal(top.truncated, true)
        assert.deepEqual(
          top.candidates.map((c) => [c.instance_id, c.fingerprint, c.evidence.signals]),
          [
            ['tls-1', 't13d_a', 3],
            ['tls-2', 't13d_b', 2],
          ],
        )
        const all = await buildReport(d.db, d.kind, interval, policy, T, 3)
        assert.equal(all.truncated, false)
        assert.deepEqual(all.candidates.at(-1)?.evidence.signals, 1, 'the later t13d_c signal is outside the window')
      } finally {
        await d.close()
      }
    })

    test('the migration backfill finds the matches of data stored before it', async () => {
      const d = await setup(dialect)
      try {
        await sighting(d, 'tls-1', 't13d_a', IPS[0], T)
        await signal(d, 'web-1', IPS[0], T + 5 * MIN)
        await signal(d, 'web-1', IPS[0], T + 5 * MIN + 1)
        await d.db.deleteFrom('web_evidence').execute()
        await correlate(d.db, sql`1 = 1`)
        assert.equal(await assertSameAsJoin(d, 'after the backfill'), 1)
      } finally {
        await d.close()
      }
    })
  })
}

describe('migrations 0005 and 0006 on a database from before them', () => {
  for (const dialect of DIALECTS) {
    test(`${dialect}: signals and sightings stored under 0004 are correlated, with their networks, by the upgrade`, async () => {
      const url = await newDatabase(dialect, pg.get)
      const before = await openDatabase<DB>({
        url,
        migrations: Object.fromEntries(Object.entries(migrations(dialect)).filter(([name]) => name < '0005')),
        create: true,
      })
      try {
        await before.db
          .insertInto('web_sightings')
          .values({
            instance_id: 'tls-1',
            fingerprint: 't13d_old',
            ip: IPS[0],
            port: 443,
            host: 'shop.example',
            seen_ms: T,
          })
          .execute()
        await before.db
          .insertInto('signals')
          .values(
            [T + 5 * MIN, T + 5 * MIN + 1].map((at, i) => ({
              instance_id: 'web-1',
              event_id: `old-${i}`,
              observed_ms: at,
              host: 'shop.example',
              site: 'shop',
              ip: IPS[0],
              trigger: 'suspicious_uri',
              connections: 1,
              errors: 1,
              successes: 0,
              window_seconds: 60,
              received_ms: at,
            })) as never, // 0004's columns: no network yet
          )
          .execute()
      } finally {
        await before.close()
      }
      const d = await openEdgeDatabase(url, 2)
      try {
        assert.equal(await assertSameAsJoin(d, 'after the upgrade'), 1, 'the 5-minute match, not the 5m + 1ms one')
        const [candidate] = candidatesOf(await groupedEvidence(d.db, d.kind, 0, Number.MAX_SAFE_INTEGER))
        assert.deepEqual(candidate?.evidence.networks, ['198.51.100.0/24'], 'the signal network filled in by 0006')
      } finally {
        await d.close()
      }
    })
  }
})

test("sqlite: a TLS page's new sightings are matched by address, not by reading the gate's every sighting", async () => {
  // SQLite has no statistics here (nobody runs ANALYZE). Asked for `t.ip in (...)`, it read the
  // gate's sightings by the primary key's first column: 150 ms a page at 1.3 million stored.
  const d = await openEdgeDatabase(await newDatabase('sqlite', pg.get))
  try {
    const addresses = Array.from({ length: 64 }, (_, k) => `192.0.2.${k}`)
    const where = sql`t.instance_id = ${'tls-1'} and t.seen_ms >= ${1} and t.seen_ms <= ${2}`
    // As a list of values, and as ingest's prepared statement takes them (one JSON array).
    for (const list of [addresses, sql`select value from json_each(${JSON.stringify(addresses)})`]) {
      const plan = (await sql<{ detail: string }>`explain query plan ${hostRule(where, list)}`.execute(d.db)).rows
      const details = plan.map((r) => r.detail)
      assert.ok(
        details.some((x) =>
          /SEARCH t USING .*INDEX web_sightings_gate_ip_seen \(instance_id=\? AND ip=\? AND seen_ms>\? AND seen_ms<\?\)/.test(
            x,
          ),
        ),
        details.join('\n'),
      )
      assert.ok(!details.some((x) => x.includes('sqlite_autoindex_web_sightings_1')), details.join('\n'))
    }
  } finally {
    await d.close()
  }
})

test("postgres: a TLS page's new sightings are probed by address, gate and time, even beyond the statistics", async () => {
  // Sightings stream in newer than the table's last ANALYZE: PostgreSQL then estimated a
  // handful of rows for the gate's newest time range, scanned all of them and hashed the
  // page's addresses (40,960 rows, 25 ms a page in the bench).
  const d = await openEdgeDatabase(await newDatabase('postgres', pg.get))
  try {
    const gate = 'tls-1'
    const insert = (fromMs: number, n: number) =>
      sql`insert into web_sightings (instance_id, fingerprint, ip, port, host, seen_ms)
        select ${gate}, 'fp' || (g % 512), '10.0.' || (g % 200) || '.' || (g % 250), 20000 + g, 'shop.example', cast(${fromMs} as bigint) + g
        from generate_series(1, ${n}) g`.execute(d.db)
    await insert(T - 60 * MIN, 20_000)
    await sql`analyze web_sightings`.execute(d.db)
    await insert(T, 60_000)
    const addresses = Array.from({ length: 64 }, (_, k) => `10.0.${k}.${k}`)
    const where = sql`t.instance_id = ${gate} and t.seen_ms >= ${T} and t.seen_ms <= ${T + 60_000}`
    const plan = (
      await sql<{ 'QUERY PLAN': string }>`explain ${hostRule(where, addresses, 'postgres')}`.execute(d.db)
    ).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n')
    assert.match(
      plan,
      /Index (Only )?Scan using web_sightings_gate_ip_seen on web_sightings t .*\n\s+Index Cond: \(\(instance_id = 'tls-1'::text\) AND \(ip = /,
      plan,
    )
    assert.doesNotMatch(plan, /Hash Cond: \(t\.ip = /, plan)
  } finally {
    await d.close()
  }
})
