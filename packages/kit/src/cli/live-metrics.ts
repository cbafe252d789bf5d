/**
 * What a `status` command asks the running service (the gates, websignal): a GET on its own
 * listener (`/metrics`, `/readyz`), with a short timeout and no redirects, reading a wildcard
 * listen address as loopback. An answer that never comes means the service is not running
 * there: a state to report, not a failure.
 */

/** `http://host:port<path>` on the listen address, a wildcard one asked on loopback. */
export function localUrl(address: { host: string; port: number }, path: string): string {
  const host = address.host === '0.0.0.0' ? '127.0.0.1' : address.host === '::' ? '::1' : address.host
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}${path}`
}

/** The status code and body of a GET there; undefined when nothing answers within `timeoutMs`. */
export async function askLocal(
  address: { host: string; port: number },
  path: string,
  timeoutMs = 2000,
): Promise<{ status: number; text: string } | undefined> {
  try {
    const res = await fetch(localUrl(address, path), { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' })
    return { status: res.status, text: await res.text() }
  } catch {
    return undefined
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * The samples of one metric in Prometheus text, keyed by the value of `label` (or `''` for a
 * metric without it), summed over its other labels.
 */
export function metricSamples(text: string, name: string, label?: string): Record<string, number> {
  const out: Record<string, number> = {}
  const line = new RegExp(`^${escapeRegExp(name)}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm')
  for (const m of text.matchAll(line)) {
    const value = Number(m[2])
    if (Number.isNaN(value)) continue
    const key = label === undefined ? '' : (new RegExp(`(?:^|,)${label}="([^"]*)"`).exec(m[1] ?? '')?.[1] ?? '')
    out[key] = (out[key] ?? 0) + value
  }
  return out
}

/** One metric's value summed over its labels; undefined when the text has no sample of it. */
export function metricValue(text: string, name: string): number | undefined {
  const samples = metricSamples(text, name)
  return '' in samples ? samples[''] : undefined
}
