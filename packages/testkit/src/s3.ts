/**
 * A real S3-compatible server for tests: `s3rver` in-process on a free loopback port,
 * storing objects in a temp folder. It accepts the fixed credentials below (SigV4 is
 * verified). With `@aws-sdk/client-s3`, set `requestChecksumCalculation` and
 * `responseChecksumValidation` to `'WHEN_REQUIRED'` (see docs/RECIPES: with the defaults a
 * streamed body is stored with its chunk framing).
 */
import { createRequire } from 'node:module'
import { freePort, tempDir } from './env.ts'

// s3rver ships no type declarations.
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: Record<string, unknown>) => S3rverInstance

export interface S3Server {
  /** `http://127.0.0.1:PORT` (use path-style addressing). */
  endpoint: string
  port: number
  region: string
  accessKeyId: string
  secretAccessKey: string
  /** Create a bucket directly in the server's store (no S3 call). */
  createBucket(name: string): Promise<void>
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

interface S3rverInstance {
  run(): Promise<unknown>
  close(): Promise<unknown>
  store: { putBucket(name: string): Promise<unknown> }
}

/**
 * Start s3rver (a few milliseconds).
 *
 * @example
 * const s3 = await startS3(); after(() => s3.stop())
 * await s3.createBucket('artifacts')
 * const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true,
 *   credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } })
 */
export async function startS3(): Promise<S3Server> {
  const dir = tempDir('gatehouse-s3-')
  const port = await freePort()
  const server = new S3rver({ port, address: '127.0.0.1', silent: true, directory: dir.path, resetOnClose: false })
  try {
    await server.run()
  } catch (err) {
    dir.remove()
    throw new Error(`s3rver did not start: ${(err as Error).message}`)
  }
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await server.close()
    dir.remove()
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async createBucket(name: string) {
      if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name)) throw new TypeError(`invalid bucket name ${name}`)
      await server.store.putBucket(name)
    },
    stop,
    [Symbol.asyncDispose]: stop,
  }
}
