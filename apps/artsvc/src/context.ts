import type { BaseContext } from '@gatehouse/kit'
import type { Authenticator } from './auth/authenticator.ts'
import type { BearerVerifier } from './auth/bearer.ts'
import type { IssuerMetadata } from './auth/issuer.ts'
import type { ArtsvcConfig } from './config.ts'
import type { ContentCaches } from './content/caches.ts'
import type { DB } from './db/schema.ts'
import type { ArtsvcMetrics } from './metrics.ts'
import type { BlobStore } from './storage/index.ts'
import type { Signer } from './viewer/signing.ts'

/**
 * What the domain modules share; built once by buildServer. The kit's base context (config,
 * logger, clock, metrics registry, and the database: Kysely as `database.db`) plus artsvc's
 * services and its own counters.
 */
export interface AppContext extends BaseContext<ArtsvcConfig, DB> {
  store: BlobStore
  auth: Authenticator
  /** Bearer access-token verification; undefined without ARTSVC_OIDC_ISSUER. */
  bearer: BearerVerifier | undefined
  issuer: IssuerMetadata | undefined
  signer: Signer
  /** Hot-path caches of the content origin (revoke/delete paths invalidate liveness). */
  caches: ContentCaches
  /** artsvc's own counters (publishes, refusals, share openings, MCP calls, maintenance). */
  counters: ArtsvcMetrics
  /** Local folders under the storage root: uploaded ZIPs and extraction space. */
  stagingDir: string
  tmpDir: string
}
