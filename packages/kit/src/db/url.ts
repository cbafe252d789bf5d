/**
 * Database URLs, apart from the drivers: config files check a URL (and CLIs print where a
 * database is) without loading Kysely or pg.
 */
import { StartupError } from '../errors.ts'

export type DatabaseKind = 'sqlite' | 'postgres'

/** Parse a database URL into its kind and location (SQLite path or PostgreSQL URL). */
export function parseDatabaseUrl(url: string): { kind: DatabaseKind; location: string } {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    if (path === '')
      throw new StartupError(`database URL ${JSON.stringify(url)}: missing file path (sqlite:/path/to/file.db)`)
    return { kind: 'sqlite', location: path }
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url)
    } catch {
      throw new StartupError('database URL is not a valid postgres:// URL')
    }
    return { kind: 'postgres', location: url }
  }
  throw new StartupError('database URL must start with sqlite: or postgres://')
}

/**
 * Whether a database setting's value may hold a password: a PostgreSQL URL may, a `sqlite:` path
 * never does. For a field's `secret` option, so a config file naming a SQLite file is no secret
 * to warn about.
 */
export function databaseUrlMayHoldSecret(value: unknown): boolean {
  return !(typeof value === 'string' && value.startsWith('sqlite:'))
}
