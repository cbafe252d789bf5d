import type { Logger } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { Authenticator } from './auth/authenticator.ts'
import type { BearerVerifier } from './auth/bearer.ts'
import type { IssuerMetadata } from './auth/issuer.ts'
import type { ArtsvcConfig } from './config.ts'
import type { ContentCaches } from './content/caches.ts'
import type { DB } from './db/schema.ts'
import type { ArtsvcMetrics } from './metrics.ts'
import type { BlobStore } from './storage/index.ts'
import type { Signer } from './viewer/signing.ts'

/** What the domain modules share; built once by buildServer. */
export interface AppContext {
  config: ArtsvcConfig
  db: Kysely<DB>
  store: BlobStore
  auth: Authenticator
  /** Bearer access-token verification; undefined without ARTSVC_OIDC_ISSUER. */
  bearer: BearerVerifier | undefined
  issuer: IssuerMetadata | undefined
  signer: Signer
  /** Hot-path caches of the content origin (revoke/delete paths invalidate liveness). */
  caches: ContentCaches
  log: Logger
  metrics: ArtsvcMetrics
  /** Local folders under the storage root: uploaded ZIPs and extraction space. */
  stagingDir: string
  tmpDir: string
  now(): number
}
