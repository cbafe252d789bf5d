import { type Database, openDatabase } from '@gatehouse/kit'
import { migrations } from './migrations.ts'
import type { DB } from './schema.ts'

export type EdgeDatabase = Database<DB>

/** Open (and migrate) the edgegate database at `url`. */
export function openEdgeDatabase(url: string, poolSize?: number): Promise<EdgeDatabase> {
  return openDatabase<DB>({ url, migrations, ...(poolSize ? { poolSize } : {}) })
}
