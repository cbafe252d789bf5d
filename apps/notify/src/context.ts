/**
 * What route modules receive from buildServer: the database, the configuration, the
 * request guard, services and metrics. Domain modules never import each other's routes.
 */
import type { BaseContext } from '@gatehouse/kit'
import type { Guard } from './auth/guard.ts'
import type { Config } from './config.ts'
import type { DB } from './db/schema.ts'
import type { ActionKeys } from './settings/action-key.ts'
import type { UserService } from './users/service.ts'

/**
 * The kit's base context (config, logger, clock, metrics, and the database: Kysely as
 * `database.db`, its kind, and prepared queries for the delivery path) plus notify's services.
 */
export interface Context extends BaseContext<Config, DB> {
  guard: Guard
  users: UserService
  /** The realtime hub: `wake()` after committing a notification or a stream change. */
  stream: { wake(): void }
  /** The action encryption key (committed setting, bootstrap material): settings/action-key.ts. */
  actionKeys: ActionKeys
}
