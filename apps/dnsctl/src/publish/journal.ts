/**
 * The publication journal: one intent record per zone, written durably before anything
 * outside the process changes (zone file, Knot configuration) and removed after the audit
 * event is appended. At startup each leftover intent is finished or undone (recovery.ts).
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { removeFileDurably, writeFileAtomic } from '../files/atomic.ts'

export interface PublishIntent {
  op: 'publish'
  zone: string
  request_id: string
  actor: string
  action: string
  before_revision: string
  after_revision: string
  before_role: 'primary' | 'secondary'
  after_role: 'primary' | 'secondary'
  started_at: string
}

export interface CreateIntent {
  op: 'create'
  zone: string
  request_id: string
  actor: string
  after_revision: string
  role: 'primary' | 'secondary'
  /** Knot already had the zone in its configuration (an adopted zone). */
  knot_had_zone: boolean
  /** The file Knot served before, for adopted zones, to put back on rollback. */
  prior_file: string | null
  started_at: string
}

export interface DeleteIntent {
  op: 'delete'
  zone: string
  request_id: string
  actor: string
  before_revision: string
  started_at: string
}

export type Intent = PublishIntent | CreateIntent | DeleteIntent

export class Journal {
  readonly dir: string
  constructor(dir: string) {
    this.dir = dir
  }

  private file(zone: string): string {
    return join(this.dir, `${zone.replace(/\.$/, '')}.intent.json`)
  }

  async begin(intent: Intent): Promise<void> {
    await writeFileAtomic(this.file(intent.zone), `${JSON.stringify(intent)}\n`)
  }

  async end(zone: string): Promise<void> {
    await removeFileDurably(this.file(zone))
  }

  /** Every intent left by a previous run. */
  async pending(): Promise<Intent[]> {
    let names: string[]
    try {
      names = await readdir(this.dir)
    } catch {
      return []
    }
    const out: Intent[] = []
    for (const name of names.filter((n) => n.endsWith('.intent.json')).sort()) {
      out.push(JSON.parse(await readFile(join(this.dir, name), 'utf8')) as Intent)
    }
    return out
  }
}
