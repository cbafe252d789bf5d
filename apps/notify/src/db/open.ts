/**
 * Opening the service database: the dialect is chosen by URL, migrations are numbered.
 */
import {
  type Database,
  type DatabaseKind,
  type DatabaseOptions,
  type Migration,
  openDatabase,
  parseDatabaseUrl,
} from '@gatehouse/kit/db/database.ts'
import { initMigration } from './migrations/0001_init.ts'
import { searchVocabularyMigration } from './migrations/0002_search_vocabulary.ts'
import { searchBacklogMigration } from './migrations/0003_search_backlog.ts'
import { channelGenerationMigration } from './migrations/0004_channel_generation.ts'
import { readerTokensMigration } from './migrations/0005_reader_tokens.ts'
import { streamChangesMigration } from './migrations/0006_stream_changes.ts'
import { pushMigration } from './migrations/0007_push.ts'
import { actionsAdminMigration } from './migrations/0008_actions_admin.ts'
import { searchFiltersMigration } from './migrations/0009_search_filters.ts'
import { channelGenerationSqliteMigration } from './migrations/0010_channel_generation_sqlite.ts'
import { searchPendingListMigration } from './migrations/0011_search_pending_list.ts'
import { searchMergeStepsMigration } from './migrations/0012_search_merge_steps.ts'
import { notificationRetentionMigration } from './migrations/0013_notification_retention.ts'
import { readerTokenExpiryMigration } from './migrations/0014_reader_token_expiry.ts'
import { auditRetentionMigration } from './migrations/0015_audit_retention.ts'
import { userLastSignInMigration } from './migrations/0016_user_last_sign_in.ts'
import { sessionRenewalMigration } from './migrations/0017_session_renewal.ts'
import { loginAttemptsMigration } from './migrations/0018_login_attempts.ts'
import type { DB } from './schema.ts'

export function migrations(kind: DatabaseKind): Record<string, Migration> {
  return {
    '0001_init': initMigration(kind),
    '0002_search_vocabulary': searchVocabularyMigration(kind),
    '0003_search_backlog': searchBacklogMigration(kind),
    '0004_channel_generation': channelGenerationMigration(kind),
    '0005_reader_tokens': readerTokensMigration(kind),
    '0006_stream_changes': streamChangesMigration(kind),
    '0007_push': pushMigration(kind),
    '0008_actions_admin': actionsAdminMigration(kind),
    '0009_search_filters': searchFiltersMigration(kind),
    '0010_channel_generation_sqlite': channelGenerationSqliteMigration(kind),
    '0011_search_pending_list': searchPendingListMigration(kind),
    '0012_search_merge_steps': searchMergeStepsMigration(kind),
    '0013_notification_retention': notificationRetentionMigration(kind),
    '0014_reader_token_expiry': readerTokenExpiryMigration(kind),
    '0015_audit_retention': auditRetentionMigration(kind),
    '0016_user_last_sign_in': userLastSignInMigration(kind),
    '0017_session_renewal': sessionRenewalMigration(kind),
    '0018_login_attempts': loginAttemptsMigration(kind),
  }
}

export type NotifyDatabase = Database<DB>

/**
 * The service database, migrated. `create: false` (the admin commands) refuses a SQLite file
 * that does not exist instead of creating an empty one.
 */
export function openNotifyDatabase(
  url: string,
  poolSize?: number,
  options: Pick<DatabaseOptions, 'create' | 'readsOnly' | 'missingHint' | 'backgroundCheckpoints' | 'onWarning'> = {},
): Promise<NotifyDatabase> {
  const { kind } = parseDatabaseUrl(url)
  return openDatabase<DB>({ url, migrations: migrations(kind), ...(poolSize ? { poolSize } : {}), ...options })
}
