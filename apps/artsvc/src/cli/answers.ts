/**
 * Reading the management API's answers in the CLI (`publish` and the management commands).
 * artsvc answers JSON, errors as `{"error":{"code","message"}}`; anything else came from
 * something that is not artsvc — a wrong `--url`, a reverse proxy's error page, a sign-in
 * proxy redirecting to its login page — and is said as such, naming the address and what
 * came back, instead of surfacing as a JSON parse error.
 */

/** A refusal or failure the CLI reports in one line (exit 1). */
export class PublishError extends Error {
  override readonly name = 'PublishError'
}

/** A flag missing for what the command turned out to do (exit 2), e.g. no --title for a new artifact. */
export class PublishUsageError extends Error {
  override readonly name = 'PublishUsageError'
}

export interface Answer {
  statusCode: number
  headers: Record<string, string | string[] | undefined>
  body: { text(): Promise<string> }
}

function header(res: Answer, name: string): string | undefined {
  const v = res.headers[name]
  return Array.isArray(v) ? v[0] : v
}

function notArtsvc(url: URL, res: Answer, what: string): PublishError {
  return new PublishError(
    `${url.href}: HTTP ${res.statusCode}, ${what}: is ${url.origin} the artsvc management URL (--url, ARTSVC_URL)?`,
  )
}

/** The answer's JSON object; a PublishError for an artsvc error or an answer artsvc would not give. */
export async function readAnswer(url: URL, res: Answer): Promise<Record<string, unknown>> {
  const text = await res.body.text()
  let body: unknown
  if (text !== '') {
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
  }
  const object =
    typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined
  const error = object?.error as { code?: unknown; message?: unknown } | undefined
  if (res.statusCode >= 300) {
    if (typeof error?.code === 'string') {
      throw new PublishError(`${url.pathname}: HTTP ${res.statusCode} ${error.code}: ${String(error.message ?? '')}`)
    }
    const location = header(res, 'location')
    if (res.statusCode < 400 && location) {
      throw notArtsvc(url, res, `redirected to ${new URL(location, url).href} (not followed)`)
    }
    const type = header(res, 'content-type')
    throw notArtsvc(url, res, `not an artsvc answer (${type ? type.split(';')[0] : 'no content type'})`)
  }
  if (text === '') return {}
  if (!object) throw notArtsvc(url, res, `not an artsvc answer (${header(res, 'content-type') ?? 'no content type'})`)
  return object
}

/** A field of a successful answer that must be a string; its absence means the answer was not artsvc's. */
export function stringField(url: URL, body: Record<string, unknown>, name: string): string {
  const v = body[name]
  if (typeof v !== 'string')
    throw new PublishError(
      `${url.href}: the answer has no ${name}: is ${url.origin} the artsvc management URL (--url, ARTSVC_URL)?`,
    )
  return v
}
