/**
 * `npm run bench:retention -w apps/edgegate`: the signal retention sweep on SQLite, against the
 * one `DELETE` it replaced, on the same rows in the same run. What it measures is how long the
 * event loop stops (the longest gap between 1 ms timer ticks while the sweep runs: on SQLite
 * every request waits that long) and what the batches cost in time. EDGEGATE_BENCH_ROWS
 * (default 200,000 signals past retention), EDGEGATE_BENCH_ROUNDS (default 2).
 */
import { cpus } from 'node:os'
import { join } from 'node:path'
import { tempDir } from '@gatehouse/testkit'
import { sql } from 'kysely'
import { openEdgeDatabase } from '../src/db/open.ts'
import { sweepSignals } from '../src/observations/retention.ts'

const ROWS = Number(process.env.EDGEGATE_BENCH_ROWS ?? 200_000)
const ROUNDS = Number(process.env.EDGEGATE_BENCH_ROUNDS ?? 2)
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
  let last = performance.now()
  let longest = 0
  const tick = setInterval(() => {
    const t = performance.now()
    longest = Math.max(longest, t - last)
    last = t
  }, 1)
  await new Promise((resolve) => setTimeout(resolve, 20))
  longest = 0
  const started = performance.now()
  const removed =
    how === 'batches'
      ? await sweepSignals(d.db, now)
      : Number((await d.db.deleteFrom('signals').where('observed_ms', '<', now).executeTakeFirst()).numDeletedRows)
  const ms = performance.now() - started
  await new Promise((resolve) => setTimeout(resolve, 20))
  clearInterval(tick)
  await d.close()
  if (removed !== ROWS) throw new Error(`${how} removed ${removed} of ${ROWS}`)
  console.log(
    `round ${round}, ${how}: ${ms.toFixed(0)} ms; the event loop stopped for at most ${longest.toFixed(1)} ms`,
  )
}

try {
  for (let round = 1; round <= ROUNDS; round++) {
    await once('one DELETE', round)
    await once('batches', round)
  }
} finally {
  dir.remove()
}
