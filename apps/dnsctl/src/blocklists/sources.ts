/**
 * Fetching one blocklist source and keeping its last good copy. HTTPS only (the configuration
 * refuses anything else) and no redirects at all (the kit client refuses them, so nothing can
 * bounce a fetch to plain HTTP); a size cap and a deadline per source; conditional requests
 * (If-None-Match / If-Modified-Since) against the stored copy. A body is checked before it can
 * replace the stored copy: HTML, binary data, text with no usable names or mostly invalid names
 * fail with a per-source error and the previous copy stays in use.
 */
import { isUtf8 } from 'node:buffer'
import { createHash } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type ClientRequest, HttpClientError, requestNoRedirect } from '@gatehouse/kit'
import { writeFileAtomic } from '../files/atomic.ts'
import { type ParsedList, parseList } from './parse.ts'

export class SourceError extends Error {
  override readonly name = 'SourceError'
}

export interface FetchLimits {
  maxBytes: number
  timeoutMs: number
  dispatcher?: ClientRequest['dispatcher']
}

interface StoredMeta {
  url: string
  etag?: string
  last_modified?: string
  fetched_at: string
}

export interface SourceOutcome {
  url: string
  ok: boolean
  error: string | null
  /** How the list in use was obtained: fresh download, unchanged (304), or the last good copy. */
  origin: 'downloaded' | 'not_modified' | 'last_good_copy' | 'none'
  domains: number
  invalid: number
  unsupported: number
  parsed: ParsedList | null
}

const HTML_START = /^\s*(?:<!doctype\s+html|<html|<head|<body|<\?xml)/i

/**
 * Reject what is not a list; the message names what the source served. The body stays bytes
 * (parse.ts reads it in place): no copy of a list of megabytes as a string.
 */
export function checkBody(body: Buffer, contentType: string | undefined): { parsed: ParsedList } {
  if (contentType && /^\s*(text\/html|application\/xhtml)/i.test(contentType)) {
    throw new SourceError(`serves HTML (content-type ${contentType.split(';')[0]}), not a domain list`)
  }
  if (body.includes(0)) throw new SourceError('serves binary data (NUL bytes), not a text domain list')
  if (!isUtf8(body)) throw new SourceError('serves binary data (not UTF-8 text), not a domain list')
  if (HTML_START.test(body.subarray(0, 512).toString('utf8'))) {
    throw new SourceError('serves an HTML or XML page, not a domain list')
  }
  const parsed = parseList(body)
  if (parsed.block.size === 0 && parsed.allow.size === 0) {
    throw new SourceError(
      parsed.invalid > 0
        ? `holds no valid domain names (${parsed.invalid} invalid, e.g. ${JSON.stringify(parsed.invalidSamples[0])})`
        : 'holds no domain names',
    )
  }
  if (parsed.invalid > 10 && parsed.invalid * 2 > parsed.entries) {
    throw new SourceError(
      `${parsed.invalid} of ${parsed.entries} entries are not valid domain names (e.g. ${JSON.stringify(parsed.invalidSamples[0])}); refusing the whole list`,
    )
  }
  return { parsed }
}

export class SourceStore {
  readonly dir: string
  constructor(blocklistDir: string) {
    this.dir = join(blocklistDir, 'sources')
  }

  #folder(url: string): string {
    return join(this.dir, createHash('sha256').update(url).digest('hex').slice(0, 32))
  }

  async #stored(url: string): Promise<{ meta: StoredMeta; body: Buffer } | undefined> {
    const folder = this.#folder(url)
    try {
      const meta = JSON.parse(await readFile(join(folder, 'meta.json'), 'utf8')) as StoredMeta
      if (meta.url !== url) return undefined
      return { meta, body: await readFile(join(folder, 'list.txt')) }
    } catch {
      return undefined
    }
  }

  async #save(url: string, body: Buffer, headers: Record<string, string | string[] | undefined>, now: Date) {
    const folder = this.#folder(url)
    await mkdir(folder, { recursive: true })
    const etag = typeof headers.etag === 'string' ? headers.etag : undefined
    const lastModified = typeof headers['last-modified'] === 'string' ? headers['last-modified'] : undefined
    const meta: StoredMeta = {
      url,
      ...(etag ? { etag } : {}),
      ...(lastModified ? { last_modified: lastModified } : {}),
      fetched_at: now.toISOString(),
    }
    // The list first: a crash between the two leaves old metadata, which only costs a full download.
    await writeFileAtomic(join(folder, 'list.txt'), body)
    await writeFileAtomic(join(folder, 'meta.json'), `${JSON.stringify(meta)}\n`)
  }

  /** Download (or revalidate) one source; on any failure fall back to its last good copy. */
  async refresh(url: string, limits: FetchLimits, now: Date): Promise<SourceOutcome> {
    const stored = await this.#stored(url)
    const outcome = (origin: SourceOutcome['origin'], parsed: ParsedList | null, error: string | null) => ({
      url,
      ok: error === null,
      error,
      origin,
      domains: parsed?.block.size ?? 0,
      invalid: parsed?.invalid ?? 0,
      unsupported: parsed?.unsupported ?? 0,
      parsed,
    })
    try {
      const headers: Record<string, string> = { accept: 'text/plain, */*;q=0.5', 'user-agent': 'dnsctl' }
      if (stored?.meta.etag) headers['if-none-match'] = stored.meta.etag
      if (stored?.meta.last_modified) headers['if-modified-since'] = stored.meta.last_modified
      const res = await requestNoRedirect(url, {
        headers,
        maxBytes: limits.maxBytes,
        timeoutMs: limits.timeoutMs,
        ...(limits.dispatcher ? { dispatcher: limits.dispatcher } : {}),
        accept: (s) => s === 200 || (s === 304 && stored !== undefined),
      })
      if (res.status === 304 && stored) return outcome('not_modified', parseList(stored.body), null)
      const ct = res.headers['content-type']
      const { parsed } = checkBody(res.body, typeof ct === 'string' ? ct : undefined)
      await this.#save(url, res.body, res.headers, now)
      return outcome('downloaded', parsed, null)
    } catch (err) {
      const why =
        err instanceof HttpClientError && err.code === 'too_large'
          ? `is larger than the ${limits.maxBytes}-byte limit`
          : (err as Error).message
      if (!(err instanceof SourceError) && !(err instanceof HttpClientError)) throw err
      if (stored) return outcome('last_good_copy', parseList(stored.body), why)
      return outcome('none', null, why)
    }
  }
}
