import { type Database, type Migration, openDatabase } from '@gatehouse/kit'
import * as init from './migrations/0001_init.ts'
import * as uploadAttempts from './migrations/0002_upload_attempts.ts'
import * as branding from './migrations/0003_branding.ts'
import type { DB } from './schema.ts'

export const migrations: Record<string, Migration> = {
  '0001_init': init,
  '0002_upload_attempts': uploadAttempts,
  '0003_branding': branding,
}

/** Open the database and apply the schema (startup fails with one line when unreachable). */
export function openArtsvcDatabase(url: string): Promise<Database<DB>> {
  return openDatabase<DB>({ url, migrations })
}
