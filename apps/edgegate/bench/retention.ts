/**
 * `npm run bench:retention -w apps/edgegate`: the signal retention sweep on SQLite, against the
 * one `DELETE` it replaced, on the same rows in the same run. What it measures is how long the
 * event loop stops (the longest gap between 1 ms timer ticks while the sweep runs: on SQLite
 * every request waits that long) and what the batches cost in time. EDGEGATE_BENCH_ROWS
 * (default 200,000 signals past retention), EDGEGATE_BENCH_ROUNDS (default 2).
 *
 * Then the fingerprint aggregate bounds (observations/bounds.ts) on EDGEGATE_BENCH_AGGREGATES
 * (default 500,000) aggregates of one node, a tenth of them decided: the hourly pass with nothing
 * to remove (under the cap, no retention), the retention removing half, and the cap removing
 * half, each against one `DELETE` of the same rows.
 *
 * Last, the purge of deleted decisions (decisions/store.ts `purgeTombstones`) on
 * EDGEGATE_BENCH_TOMBSTONES (default 200,000) tombstones past retention among as many live
 * decisions of ten nodes, against one `DELETE` of the same rows.
 */
import { cpus } from 'node:os'
import { join } from 'node:path'
import { loopStallDuring, tempDir } from '@gatehouse/testkit'
import { sql } from 'kysely'
import { openEdgeDatabase } from '../src/db/open.ts'
import { purgeTombstones } from '../src/decisions/store.ts'
import { pruneAggregatesToCap, removeUnseenAggregates } from '../src/observations/bounds.ts'
import { sweepSignals } from '../src/observations/retention.ts'

const ROWS = Number(process.env.EDGEGATE_BENCH_ROWS ?? 200_000)
const ROUNDS = Number(process.env.EDGEGATE_BENCH_ROUNDS ?? 2)
const AGGREGATES = Number(process.env.EDGEGATE_BENCH_AGGREGATES ?? 500_000)
const TOMBSTONES = Number(process.env.EDGEGATE_BENCH_TOMBSTONES ?? 200_000)
const dir = tempDir('edgegate-bench-retention-')
console.log(`machine: ${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores; ${ROWS} signals past retention`)

async function once(how: 'one DELETE' | 'batches', round: number): Promise<void> {
  const d = await openEdgeDatabase(`sqlite:${join(dir.path, `${round}-${how.replace(' ', '-')}.db`)}`)
  const now = Date.now()
  await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${ROWS})
    insert into signals (instance_id, event_id, observed_ms, host, site, ip, network, trigger, connections,
      errors, successes, window_seconds, received_ms)
    select 'node', 'e' || i, ${now - 10 * 86_400_000} + i, 'h', 's', '203.0.113.' || (i % 250), '203.0.113.0/24',
      't', 1, 0, 1, 60, ${now} from n`.execute(d.db)
  const {
    ms,
    longest,
    result: removed,
  } = await loopStallDuring(async () =>
    how === 'batches'
      ? await sweepSignals(d.db, now)
      : Number((await d.db.deleteFrom('signals').where('observed_ms', '<', now).executeTakeFirst()).numDeletedRows),
  )
  await d.close()
  if (removed !== ROWS) throw new Error(`${how} removed ${removed} of ${ROWS}`)
  console.log(
    `round ${round}, ${how}: ${ms.toFixed(0)} ms; the event loop stopped for at most ${longest.toFixed(1)} ms`,
  )
}

/** One node's aggregates, fingerprint i last seen at `base + i`; every tenth has an approval. */
async function aggregates(file: string, base: number) {
  const d = await openEdgeDatabase(`sqlite:${join(dir.path, file)}`)
  await sql`with recursive n(i) as (select 0 union all select i + 1 from n where i < ${AGGREGATES - 1})
    insert into fingerprints (instance_id, fingerprint, reported_status, first_seen_ms, last_seen_ms, count, ips,
      ports, sightings, oldest_sighting_ms, metadata, updated_ms)
    select 'node', printf('%032x', i * 2654435761 % 4294967296), 'unknown', ${base} + i, ${base} + i, 1,
      '["192.0.2.1"]', '[22]', '[]', null, '{}', ${base} from n`.execute(d.db)
  await sql`insert into decisions (scope_type, scope_id, fingerprint, status, label, updated_us, actor, source,
      expires_ms, evidence, deleted)
    select 'instance', instance_id, fingerprint, 'approved', '', rowid, 'bench', 'manual', null, null, 0
      from fingerprints where rowid % 10 = 0`.execute(d.db)
  return d
}

async function bounds(round: number): Promise<void> {
  const base = Date.now() - 30 * 86_400_000
  const half = base + AGGREGATES / 2
  const undecidedBelow = `(fingerprint) not in (select fingerprint from decisions where deleted = 0)`
  const cases: Array<[string, (d: Awaited<ReturnType<typeof aggregates>>) => Promise<number>]> = [
    [
      'pass with nothing to remove',
      async (d) => (await removeUnseenAggregates(d.db, base)) + (await pruneAggregatesToCap(d.db, AGGREGATES)),
    ],
    [
      'one DELETE, retention',
      async (d) =>
        Number(
          (
            await sql`delete from fingerprints where last_seen_ms < ${half} and ${sql.raw(undecidedBelow)}`.execute(
              d.db,
            )
          ).numAffectedRows,
        ),
    ],
    ['retention, half', (d) => removeUnseenAggregates(d.db, half)],
    ['cap, half', (d) => pruneAggregatesToCap(d.db, AGGREGATES / 2)],
  ]
  for (const [name, work] of cases) {
    const d = await aggregates(`${round}-aggregates-${name.replace(/\W+/g, '-')}.db`, base)
    const { ms, longest, result } = await loopStallDuring(() => work(d))
    await d.close()
    console.log(
      `round ${round}, aggregates, ${name}: ${result} removed in ${ms.toFixed(0)} ms; the event loop stopped for at most ${longest.toFixed(1)} ms`,
    )
  }
}

/** Ten nodes' decisions: TOMBSTONES deleted 40 days ago, as many live ones, interleaved in time. */
async function tombstones(round: number): Promise<void> {
  const oldUs = (Date.now() - 40 * 86_400_000) * 1000
  for (const how of ['one DELETE', 'batches'] as const) {
    const d = await openEdgeDatabase(`sqlite:${join(dir.path, `${round}-tombstones-${how.replace(' ', '-')}.db`)}`)
    await sql`with recursive n(i) as (select 0 union all select i + 1 from n where i < ${2 * TOMBSTONES - 1})
      insert into decisions (scope_type, scope_id, fingerprint, status, label, updated_us, actor, source,
        expires_ms, evidence, deleted)
      select 'instance', 'node' || (i % 10), printf('%032x', i), 'pending', '', ${oldUs} + i, 'bench', 'manual',
        null, null, i % 2 from n`.execute(d.db)
    const { ms, longest, result } = await loopStallDuring(async () =>
      how === 'batches'
        ? await purgeTombstones(d.db, 'sqlite', oldUs + 2 * TOMBSTONES)
        : Number((await d.db.deleteFrom('decisions').where('deleted', '=', 1).executeTakeFirst()).numDeletedRows),
    )
    await d.close()
    if (result !== TOMBSTONES) throw new Error(`${how} removed ${result} of ${TOMBSTONES}`)
    console.log(
      `round ${round}, deleted decisions, ${how}: ${result} removed in ${ms.toFixed(0)} ms; the event loop stopped for at most ${longest.toFixed(1)} ms`,
    )
  }
}

try {
  for (let round = 1; round <= ROUNDS; round++) {
    await once('one DELETE', round)
    await once('batches', round)
  }
  console.log(`${AGGREGATES} aggregates of one node, a tenth decided`)
  for (let round = 1; round <= ROUNDS; round++) await bounds(round)
  console.log(`${TOMBSTONES} deleted decisions past retention among as many live ones`)
  for (let round = 1; round <= ROUNDS; round++) await tombstones(round)
} finally {
  dir.remove()
}
