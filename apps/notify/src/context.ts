/**
 * What route modules receive from buildServer: the database, the configuration, the
 * request guard, services and metrics. Domain modules never import each other's routes.
 */
import type { AppMetrics, Database } from '@gatehouse/kit'
import type { Guard } from './auth/guard.ts'
import type { Config } from './config.ts'
import type { DB } from './db/schema.ts'
import type { UserService } from './users/service.ts'

export interface Context {
  config: Config
  /** Kysely (`database.db`), its kind, and prepared queries for the delivery path. */
  database: Database<DB>
  guard: Guard
  users: UserService
  metrics: AppMetrics
  /** The realtime hub: `wake()` after committing a notification or a stream change. */
  stream: { wake(): void }
}
