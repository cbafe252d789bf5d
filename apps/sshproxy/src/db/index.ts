/**
 * Open the gate's SQLite store (`sqlite:<path>` through the kit), apply migrations, and bring
 * rows written by older versions within today's bounds.
 */
import { type Database, openDatabase } from '@gatehouse/kit/db/database.ts'
import { trimOversized } from '../fingerprints/store.ts'
import * as m0001 from './migrations/0001_init.ts'
import * as m0002 from './migrations/0002_managed_ranges.ts'
import * as m0003 from './migrations/0003_verdict_source.ts'
import * as m0004 from './migrations/0004_decision_expiry.ts'
import * as m0005 from './migrations/0005_expiry_index.ts'
import type { DB } from './schema.ts'

export const migrations = {
  '0001_init': m0001,
  '0002_managed_ranges': m0002,
  '0003_verdict_source': m0003,
  '0004_decision_expiry': m0004,
  '0005_expiry_index': m0005,
}

export type Store = Database<DB>

/**
 * `serve` creates the file when it is missing; the store commands pass `create: false` and get
 * one line naming the path instead of an empty database. Those that only read pass `readsOnly`.
 */
export async function openStore(path: string, options: { create?: boolean; readsOnly?: boolean } = {}): Promise<Store> {
  const store = await openDatabase<DB>({
    url: `sqlite:${path}`,
    migrations,
    create: options.create ?? true,
    readsOnly: options.readsOnly === true,
    missingHint: "check --db, $SSHPROXY_DB or the config file's db, or start sshproxy serve once",
  })
  // A file opened read-only (its disk no longer takes writes) is read as it is.
  if (store.readOnly) return store
  try {
    await trimOversized(store.db)
  } catch (err) {
    await store.close()
    throw err
  }
  return store
}
