/** `notify audit list`: the administrative audit log, newest first (what GET /api/v1/admin/audit answers). */
import { printList } from '@gatehouse/kit/cli/output.ts'
import { CliError } from '@gatehouse/kit/cli/program.ts'
import { listAudit } from '../audit/store.ts'
import { readDatabase } from './database.ts'

function positive(value: unknown, flag: string, max: number): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1 || n > max) throw new CliError(`${flag} must be a whole number from 1 to ${max}`)
  return n
}

export async function auditListCommand(o: Record<string, unknown>): Promise<void> {
  const limit = positive(o.limit, '--limit', 10_000) ?? 50
  const before = positive(o.before, '--before', Number.MAX_SAFE_INTEGER)
  const entries = await readDatabase(o, (d) => listAudit(d.db, limit, before))
  printList(
    entries,
    [
      { header: 'ID', value: (e) => String(e.id) },
      { header: 'WHEN', value: (e) => e.created_at },
      { header: 'ACTOR', value: (e) => e.actor },
      { header: 'ACTION', value: (e) => e.action },
      { header: 'TARGET', value: (e) => e.target },
      { header: 'DETAILS', value: (e) => (Object.keys(e.details).length === 0 ? '' : JSON.stringify(e.details)) },
    ],
    {
      json: o.json === true,
      toJson: (e) => e,
      empty: before === undefined ? 'the audit log is empty' : `no audit entries older than id ${before}`,
    },
  )
}
