// The REST API from the management origin: same-origin requests with the session cookie
// (the server checks Origin on every mutation). Errors carry the server's code and reason.

export class ApiError extends Error {
  constructor(status, code, message, reason) {
    super(message)
    this.status = status
    this.code = code
    this.reason = reason
  }
}

export async function errorFrom(status, text) {
  try {
    const e = JSON.parse(text).error
    if (e && typeof e.message === 'string') return new ApiError(status, e.code, e.message, e.reason)
  } catch {}
  return new ApiError(status, 'http_error', `the server answered ${status}`)
}

export async function api(method, path, body) {
  const init = { method, headers: { accept: 'application/json' }, credentials: 'same-origin' }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let res
  try {
    res = await fetch(path, init)
  } catch {
    throw new ApiError(0, 'network', 'the server could not be reached; check your connection and try again')
  }
  if (res.status === 401) {
    // The session ended: sign in again and come back here.
    location.assign(`/api/v1/auth/login?return_to=${encodeURIComponent(location.pathname + location.search)}`)
    throw new ApiError(401, 'authentication_required', 'your session ended; signing you in again')
  }
  const text = res.status === 204 ? '' : await res.text()
  if (!res.ok) throw await errorFrom(res.status, text)
  return text ? JSON.parse(text) : undefined
}

/** "bundle rejected: \"a.html\" appears twice (duplicate_path)": the message, and the reason when there is one. */
export function explain(err) {
  if (!(err instanceof ApiError)) return String(err?.message ?? err)
  return err.reason && !err.message.includes(err.reason) ? `${err.message} (${err.reason})` : err.message
}
