/**
 * Published files are stored once per content (key = SHA-256 of the bytes), so versions
 * are immutable by construction and new versions share unchanged files. The version's
 * manifest lives in the database; a JSON copy is also written next to the blobs so an
 * operator can recover a bundle without the database. Nothing here lists or deletes
 * published objects; the one removal is a manifest written for a version that was then not
 * published (its transaction failed).
 */
import type { Readable } from 'node:stream'

/** Bytes `start` to `end` of a blob, both included (an HTTP byte range). */
export interface ByteRange {
  start: number
  end: number
}

export interface BlobStore {
  readonly kind: 'filesystem' | 's3'
  /** Store a local file's bytes under its SHA-256 (idempotent); the temp file is consumed. */
  putFile(sha256: string, tempPath: string, size: number): Promise<void>
  /** Store a small JSON document (version manifests) under `manifests/<name>.json`. */
  putManifest(name: string, body: string): Promise<void>
  /**
   * Make the names given by `putFile` and `putManifest` so far durable (the folders' entries
   * reach the disk), before the database says the version exists. Each folder once per call.
   */
  flush(): Promise<void>
  /** Remove the manifest of a version whose publication failed: no version refers to it. */
  removeUnpublishedManifest(name: string): Promise<void>
  /** Stream a blob, or its bytes `start` to `end` inclusive (for the content origin). */
  read(sha256: string, range?: ByteRange): Promise<Readable>
  /** Throws while the backend is unusable (for /readyz and startup). */
  check(): Promise<void>
}

export function blobKey(sha256: string): string {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new TypeError('blob keys are SHA-256 hex digests')
  return `objects/${sha256.slice(0, 2)}/${sha256.slice(2)}`
}
