/** Open the gate's SQLite store (`sqlite:<path>` through the kit) and apply migrations. */
import { type Database, openDatabase } from '@gatehouse/kit/db/database.ts'
import * as m0001 from './migrations/0001_init.ts'
import * as m0002 from './migrations/0002_verdict_source.ts'
import * as m0003 from './migrations/0003_expiry_index.ts'
import type { DB } from './schema.ts'

export const migrations = {
  '0001_init': m0001,
  '0002_verdict_source': m0002,
  '0003_expiry_index': m0003,
}

export type Store = Database<DB>

/**
 * `serve` creates the file when it is missing; the store commands pass `create: false` and get
 * one line naming the path instead of an empty database. Those that only read pass `readsOnly`.
 */
export function openStore(path: string, options: { create?: boolean; readsOnly?: boolean } = {}): Promise<Store> {
  return openDatabase<DB>({
    url: `sqlite:${path}`,
    migrations,
    create: options.create ?? true,
    readsOnly: options.readsOnly === true,
    missingHint: 'check --db (or $TLSGATE_DB), or start tlsgate serve once',
  })
}
