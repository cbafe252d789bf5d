import type { ArtsvcConfig } from '../config.ts'
import type { BlobStore } from './blob-store.ts'
import { FilesystemBlobStore } from './filesystem.ts'

export type { BlobStore } from './blob-store.ts'

/** Build the configured backend; `credentials` overrides the SDK's standard chain. */
export async function createBlobStore(
  config: ArtsvcConfig,
  credentials?: { accessKeyId: string; secretAccessKey: string },
): Promise<BlobStore> {
  if (config.storageBackend === 'filesystem') return new FilesystemBlobStore(config.storageRoot)
  // The AWS SDK is large: load it only in S3 mode.
  const { S3BlobStore } = await import('./s3.ts')
  return new S3BlobStore({
    bucket: config.s3Bucket!,
    prefix: config.s3Prefix,
    region: config.s3Region,
    endpoint: config.s3Endpoint,
    forcePathStyle: config.s3UsePathStyle,
    timeoutMs: config.s3Timeout,
    credentials,
  })
}
