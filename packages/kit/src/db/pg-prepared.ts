/**
 * Server-side prepared statements on PostgreSQL for the hot path's fixed statements.
 *
 * Kysely hands node-postgres every statement as text and values, which node-postgres sends
 * unnamed: PostgreSQL parses, analyses and plans the text again on every execution. For a
 * statement a service runs thousands of times a second (a group commit's multi-row insert,
 * its keyed read), that is a large part of the database's CPU per statement. A text passed
 * through `serverPrepared` is sent named instead: each connection parses it once, and later
 * executions only bind and run it (node-postgres remembers per connection what it parsed).
 *
 * Only fixed texts belong here (one text per statement, whatever the values: arrays or joined
 * columns, not a placeholder per value): every registered text stays prepared on every pooled
 * connection. And only statements whose plan cannot go wrong as the tables grow: after five
 * executions PostgreSQL keeps one generic plan, made from the statistics of that moment, until
 * the next ANALYZE. An insert from `unnest` or a lookup that can only go by key (a lateral
 * subquery per key) is safe; a join or a filter planned on a young table may keep scanning it
 * whole. Kysely's `Database.prepare` queries are therefore not registered automatically.
 *
 * A pooler in transaction mode must track named statements (PgBouncer 1.21 and later with
 * `max_prepared_statements` above 0); behind one that does not, `?prepare=false` in the
 * database URL sends every statement unnamed, as before.
 */
import type pg from 'pg'
import { StartupError } from '../errors.ts'

const names = new Map<string, string>()

/** Register `text` to run as a named (server-side prepared) statement; returns it unchanged. */
export function serverPrepared(text: string): string {
  if (!names.has(text)) names.set(text, `gatehouse_${names.size + 1}`)
  return text
}

/** The name `text` runs under, if registered. */
export function preparedName(text: string): string | undefined {
  return names.get(text)
}

/**
 * A node-postgres Client class that runs registered texts as named statements: the pool's
 * `Client`, so every connection Kysely gets sends them named.
 */
export function namingClient(base: typeof pg.Client): typeof pg.Client {
  return class NamingClient extends base {
    // node-postgres's overloads do not survive a subclass; the call shape Kysely uses is
    // (text, values), and every other shape passes through untouched.
    override query(config: unknown, values?: unknown, callback?: unknown): never {
      if (typeof config === 'string' && Array.isArray(values) && callback === undefined) {
        const name = names.get(config)
        if (name !== undefined) return (super.query as (c: unknown) => never)({ name, text: config, values })
      }
      return (super.query as (c: unknown, v?: unknown, cb?: unknown) => never)(config, values, callback)
    }
  } as unknown as typeof pg.Client
}

/**
 * The `prepare` option of a PostgreSQL URL (`?prepare=false` turns named statements off; the
 * default is on), and the URL without it for node-postgres.
 */
export function prepareOption(url: string): { connectionString: string; prepare: boolean } {
  const parsed = new URL(url)
  const value = parsed.searchParams.get('prepare')
  if (value === null) return { connectionString: url, prepare: true }
  if (value !== 'true' && value !== 'false') {
    throw new StartupError(`database URL: prepare=${value} must be true or false`)
  }
  parsed.searchParams.delete('prepare')
  return { connectionString: parsed.toString(), prepare: value === 'true' }
}
