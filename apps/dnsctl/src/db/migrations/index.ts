import type { Migration } from 'kysely'
import { init } from './0001_init.ts'

export const migrations: Record<string, Migration> = {
  '0001_init': init,
}
