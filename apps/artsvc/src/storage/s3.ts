/**
 * Blobs in an existing S3 bucket below an optional prefix. Request checksums are only
 * computed when an operation requires them: S3-compatible servers store the default
 * aws-chunked framing as object data (see docs/RECIPES). Credentials follow the SDK's
 * standard chain unless given (tests pass s3rver's).
 */
import { createReadStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { type BlobStore, type ByteRange, blobKey } from './blob-store.ts'

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
  readonly #timeoutMs: number

  constructor(options: S3Options) {
    this.#timeoutMs = options.timeoutMs
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

  /** An S3 PUT is durable when it is answered: nothing to do. */
  async flush(): Promise<void> {}

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

  async read(sha256: string, range?: ByteRange): Promise<Readable> {
    const out = await this.client.send(
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: this.prefix + blobKey(sha256),
        ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
      }),
    )
    if (!(out.Body instanceof Readable)) throw new Error('S3 returned no body stream')
    endWhenSilent(out.Body as IncomingMessage, this.#timeoutMs)
    return out.Body
  }

  async check(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }))
  }

  close(): void {
    this.client.destroy()
  }
}

/**
 * Bound a blob's body by the store's silence, not by its reader's pace. The SDK's `socketTimeout`
 * counts any pause on the socket, and a body waits whenever the client downloading it reads
 * slowly (backpressure stops reading from S3): a reader on a slow link, or one that paused for the
 * timeout, got a truncated file. Here the bound runs only while the body waits for S3: while
 * node:http reads its socket, which it stops (pauses) once the body's buffer is full and resumes
 * when its reader asks for more, whether the reader pipes it or reads it. Then `ms` without a byte
 * ends it (a store gone silent mid-body), and the response it feeds is cut rather than held for ever.
 */
function endWhenSilent(body: IncomingMessage, ms: number): void {
  const { socket } = body
  if (!socket) return
  socket.setTimeout(0)
  let bytes = socket.bytesRead
  let quietSince = Date.now()
  const check = setInterval(
    () => {
      const now = Date.now()
      if (socket.bytesRead !== bytes || socket.isPaused()) {
        bytes = socket.bytesRead
        quietSince = now
      } else if (now - quietSince >= ms) {
        body.destroy(
          Object.assign(new Error(`S3 sent nothing for ${ms} ms in the middle of a body`), { name: 'TimeoutError' }),
        )
      }
    },
    Math.max(25, Math.min(1000, ms / 4)),
  )
  check.unref()
  body.once('close', () => clearInterval(check))
}
