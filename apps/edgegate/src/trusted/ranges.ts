/**
 * Trusted-source discovery: CIDR ranges from local files and HTTPS sources of published
 * ranges, refreshed periodically and served in policy responses as `trusted_ranges`.
 * Redirects are refused (kit's requestNoRedirect). A source that fails keeps its last good
 * list, so a transient outage never shrinks what gates bypass; a file that cannot be read
 * or parsed at startup stops startup.
 */
import { readFileSync } from 'node:fs'
import { type ClientRequest, type Logger, parseCidr, requestNoRedirect, StartupError } from '@gatehouse/kit'
import { parseRangeLines } from '../config.ts'

export interface TrustedRangesOptions {
  files: string[]
  urls: string[]
  refreshMs: number
  dispatcher?: ClientRequest['dispatcher']
  log: Logger
}

/** Published ranges: text with one CIDR per line, a JSON array of strings, or JSON `{"prefixes": [...]}`. */
export function parseRangeDocument(text: string, where: string): string[] {
  const trimmed = text.trim()
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    const doc = JSON.parse(trimmed) as unknown
    const list = Array.isArray(doc) ? doc : (doc as { prefixes?: unknown }).prefixes
    if (!Array.isArray(list)) throw new Error(`${where}: JSON must be an array of CIDR strings or {"prefixes": [...]}`)
    return list.map((x, i) => {
      if (typeof x !== 'string') throw new Error(`${where}: element ${i} is not a string`)
      return parseCidr(x).text
    })
  }
  return parseRangeLines(text, where)
}

export class TrustedRanges {
  readonly #options: TrustedRangesOptions
  readonly #bySource = new Map<string, string[]>()
  #timer: NodeJS.Timeout | undefined
  #merged: string[] = []

  constructor(options: TrustedRangesOptions) {
    this.#options = options
  }

  /** The union of every source's last good list, sorted and deduplicated. */
  current(): string[] {
    return this.#merged
  }

  async start(): Promise<void> {
    for (const file of this.#options.files) {
      try {
        this.#readFile(file)
      } catch (err) {
        throw new StartupError(`trusted ranges: ${(err as Error).message}`)
      }
    }
    await this.refresh()
    this.#timer = setInterval(() => void this.refresh(), this.#options.refreshMs)
    this.#timer.unref()
  }

  stop(): void {
    clearInterval(this.#timer)
  }

  async refresh(): Promise<void> {
    for (const file of this.#options.files) {
      try {
        this.#readFile(file)
      } catch (err) {
        this.#options.log.warn({ source: file, cause: err }, 'trusted range file refresh failed; keeping the last list')
      }
    }
    await Promise.all(
      this.#options.urls.map(async (url) => {
        try {
          const res = await requestNoRedirect(url, {
            maxBytes: 8 * 1024 * 1024,
            timeoutMs: 30_000,
            ...(this.#options.dispatcher ? { dispatcher: this.#options.dispatcher } : {}),
          })
          this.#set(url, parseRangeDocument(res.body.toString('utf8'), new URL(url).origin))
        } catch (err) {
          this.#options.log.warn(
            { source: new URL(url).origin, cause: err },
            'trusted range source failed; keeping the last list',
          )
        }
      }),
    )
  }

  #readFile(file: string) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw new Error(`${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
    }
    this.#set(file, parseRangeLines(text, file))
  }

  #set(source: string, list: string[]) {
    this.#bySource.set(source, list)
    this.#merged = [...new Set([...this.#bySource.values()].flat())].sort()
  }
}
