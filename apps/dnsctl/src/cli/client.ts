/**
 * The CLI's HTTP client for the dnsctl API: the base URL from `--url`, `$DNSCTL_URL` or the
 * config file's `listen`; API errors become one line (message and code); a refused connection
 * says how to point at the server.
 */
import { CliError, UsageError } from '@gatehouse/kit/cli/program.ts'
import { apiUrlFromConfig } from '../config.ts'

export interface Api {
  base: string
  request<T>(method: string, path: string, options?: RequestOptions): Promise<Response & { json(): Promise<T> }>
  json<T>(method: string, path: string, options?: RequestOptions): Promise<{ body: T; etag: string | undefined }>
}

export interface RequestOptions {
  body?: unknown
  text?: string
  headers?: Record<string, string>
  /** Statuses answered without an error (e.g. 404 for "does the zone exist"). */
  accept?: number[]
}

export function apiOf(opts: Record<string, unknown>, env = process.env): Api {
  const base = (
    (opts.url as string | undefined) ??
    env.DNSCTL_URL ??
    apiUrlFromConfig(env, opts.config as string | undefined)
  ).replace(/\/+$/, '')
  // Where the address came from, to name it: a mistyped address is a usage error (exit 2).
  const from = opts.url !== undefined ? '--url' : env.DNSCTL_URL !== undefined ? '$DNSCTL_URL' : 'the config file'
  let parsed: URL
  try {
    parsed = new URL(base)
  } catch {
    throw new UsageError(`${from}: ${JSON.stringify(base)} is not a URL (e.g. http://127.0.0.1:8053)`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError(`${from}: ${JSON.stringify(base)} must start with http:// or https://`)
  const request = async (method: string, path: string, o: RequestOptions = {}) => {
    const headers: Record<string, string> = { 'x-dns-actor': actor(), ...o.headers }
    let body: string | undefined
    if (o.text !== undefined) {
      body = o.text
      headers['content-type'] = 'text/dns'
    } else if (o.body !== undefined) {
      body = JSON.stringify(o.body)
      headers['content-type'] = 'application/json'
    }
    let res: Response
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        redirect: 'manual',
      })
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause
      throw new CliError(
        `cannot reach dnsctl at ${base} (${cause?.code ?? cause?.message ?? (err as Error).message}); is dnsctl serve running? set --url or $DNSCTL_URL`,
      )
    }
    if (!res.ok && !(o.accept ?? []).includes(res.status)) {
      const text = await res.text()
      let message = `${method} ${path}: HTTP ${res.status}`
      try {
        const e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error
        if (e?.message) message = `${e.message} (${e.code})`
      } catch {}
      throw new CliError(message)
    }
    return res
  }
  return {
    base,
    request: request as Api['request'],
    async json<T>(method: string, path: string, o: RequestOptions = {}) {
      const res = await request(method, path, o)
      const etag = res.headers.get('etag')?.replace(/^"|"$/g, '')
      const text = await res.text()
      return { body: (text === '' ? undefined : JSON.parse(text)) as T, etag }
    },
  }
}

/** The X-Dns-Actor of CLI changes (recorded in the audit events): printable ASCII, at most 128. */
function actor(): string {
  return `cli:${process.env.USER ?? 'local'}`.replace(/[^\x21-\x7e]/g, '_').slice(0, 128)
}

/** The path segment of a zone name (the API takes it with or without the trailing dot). */
export function zonePath(zone: string): string {
  return `/v1/zones/${encodeURIComponent(zone.replace(/\.$/, ''))}`
}
