/**
 * SMTP correlation reports (spec "SMTP report generation"): only the newest generation per
 * (node, SMTP namespace, listener). Same replay ID: success, nothing changes. A different
 * report with a newer generation replaces it; older or equal: 409. Reports never touch
 * decisions or policy responses.
 */
import type { DatabaseKind, SmtpReport } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { ClockCheck } from '../nodes/clock-ahead.ts'
import { parseMillis } from '../timestamps.ts'

export type SmtpResult = 'stored' | 'replaced' | 'unchanged'

export async function acceptReport(
  db: Kysely<DB>,
  kind: DatabaseKind,
  instanceId: string,
  report: SmtpReport,
  clock: ClockCheck = new ClockCheck(Date.now()),
): Promise<SmtpResult> {
  const sent = parseMillis(report.generated_at)
  if (sent === undefined) throw errors.invalid_timestamp('generated_at')
  // Ordered by generation: one dated years ahead would make every later report stale (409).
  const generated = clock.date(sent)
  const from = parseMillis(report.coverage.from)
  const to = parseMillis(report.coverage.to)
  if (from === undefined) throw errors.invalid_timestamp('coverage.from')
  if (to === undefined) throw errors.invalid_timestamp('coverage.to')
  if (from > to) throw errors.invalid_report('coverage.from is after coverage.to')
  report.evidence.forEach((e, i) => {
    if (e.last_seen !== undefined && parseMillis(e.last_seen) === undefined) {
      throw errors.invalid_timestamp(`evidence[${i}].last_seen`)
    }
  })
  const body = JSON.stringify(report)
  if (Buffer.byteLength(body) > 64 * 1024) throw errors.invalid_report('the report exceeds 64 KiB')
  const row = {
    instance_id: instanceId,
    namespace: report.namespace,
    listener: report.listener,
    replay_id: report.replay_id,
    generated_ms: generated,
    body,
    received_ms: clock.nowMs,
  }
  return db.transaction().execute(async (trx) => {
    // Insert-or-nothing first so a SQLite transaction writes (locks) before it reads, and
    // PostgreSQL has a row to lock.
    const inserted = await trx
      .insertInto('smtp_reports')
      .values(row)
      .onConflict((oc) => oc.columns(['instance_id', 'namespace', 'listener']).doNothing())
      .executeTakeFirst()
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return 'stored'
    let q = trx
      .selectFrom('smtp_reports')
      .select(['replay_id', 'generated_ms'])
      .where('instance_id', '=', instanceId)
      .where('namespace', '=', report.namespace)
      .where('listener', '=', report.listener)
    if (kind === 'postgres') q = q.forUpdate()
    const stored = await q.executeTakeFirstOrThrow()
    if (stored.replay_id === report.replay_id) return 'unchanged'
    if (generated <= Number(stored.generated_ms)) throw errors.smtp_report_stale()
    await trx
      .updateTable('smtp_reports')
      .set({ replay_id: row.replay_id, generated_ms: row.generated_ms, body: row.body, received_ms: row.received_ms })
      .where('instance_id', '=', instanceId)
      .where('namespace', '=', report.namespace)
      .where('listener', '=', report.listener)
      .execute()
    return 'replaced'
  })
}

export async function currentReports(db: Kysely<DB>) {
  const rows = await db
    .selectFrom('smtp_reports')
    .selectAll()
    .orderBy('instance_id')
    .orderBy('namespace')
    .orderBy('listener')
    .execute()
  return rows.map((r) => ({
    ...(JSON.parse(r.body) as SmtpReport),
    received_at: new Date(Number(r.received_ms)).toISOString(),
  }))
}
