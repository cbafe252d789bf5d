/**
 * Blobs in an existing S3 bucket below an optional prefix. Request checksums are only
 * computed when an operation requires them: S3-compatible servers store the default
 * aws-chunked framing as object data (see docs/RECIPES). Credentials follow the SDK's
 * standard chain unless given (tests pass s3rver's).
 */
import { createReadStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { Readable } from 'node:stream'
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { type BlobStore, blobKey } from './blob-store.ts'

export interface S3Options {
  bucket: string
  prefix: string
  region: string
  endpoint?: string | undefined
  forcePathStyle: boolean
  /** How long a request may take to connect, or go without a byte either way, before it fails. */
  timeoutMs: number
  credentials?: { accessKeyId: string; secretAccessKey: string } | undefined
}

export class S3BlobStore implements BlobStore {
  readonly kind = 's3'
  readonly client: S3Client
  readonly bucket: string
  readonly prefix: string

  constructor(options: S3Options) {
    this.bucket = options.bucket
    this.prefix = options.prefix === '' || options.prefix.endsWith('/') ? options.prefix : `${options.prefix}/`
    this.client = new S3Client({
      region: options.region,
      forcePathStyle: options.forcePathStyle,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      // The SDK waits for ever by default: a store gone silent (a frozen host, a partition)
      // held every request that needed it, and readiness, with no end.
      requestHandler: { connectionTimeout: options.timeoutMs, socketTimeout: options.timeoutMs },
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
    })
  }

  async putFile(sha256: string, tempPath: string, size: number): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.prefix + blobKey(sha256),
        Body: createReadStream(tempPath),
        ContentLength: size,
        ContentType: 'application/octet-stream',
      }),
    )
    await rm(tempPath, { force: true })
  }

  async putManifest(name: string, body: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: `${this.prefix}manifests/${name}.json`,
        Body: body,
        ContentType: 'application/json',
      }),
    )
  }

  async removeUnpublishedManifest(name: string): Promise<void> {
    await this.client.send(
      new DeleteObjectCommand({ Bucket: this.bucket, Key: `${this.prefix}manifests/${name}.json` }),
    )
  }

  async read(sha256: string): Promise<Readable> {
    const out = await this.client.send(
      new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + blobKey(sha256) }),
    )
    if (!(out.Body instanceof Readable)) throw new Error('S3 returned no body stream')
    return out.Body
  }

  async check(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }))
  }

  close(): void {
    this.client.destroy()
  }
}
