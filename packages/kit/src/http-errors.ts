/**
 * How the kit's HTTP apps answer errors: coded errors as they are, Fastify's own (validation,
 * body limits, bad JSON) translated to coded ones, anything else a plain 500; and the 404/405
 * answer for paths no route takes (the 405 naming the route's pattern, never the path).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { isDatabaseUnavailable } from './db/unavailable.ts'
import { validationMessage } from './docs.ts'
import { AppError, kitErrors, RETRY_SOON } from './errors.ts'
import type { HttpApp } from './http.ts'

/** The one place errors become responses: coded errors as they are, everything else as a plain 500. */
export function sendError(
  app: HttpApp,
  err: FastifyError | AppError | Error,
  req: FastifyRequest,
  reply: FastifyReply,
  bodyLimit: number,
) {
  let appErr: AppError
  if (err instanceof AppError) appErr = err
  else appErr = translate(err as FastifyError, bodyLimit)
  if (appErr.statusCode >= 500) req.log.error({ code: appErr.code, status: appErr.statusCode, err }, 'request failed')
  else if (appErr.cause !== undefined) {
    req.log.info({ code: appErr.code, status: appErr.statusCode, cause: appErr.cause }, 'request refused')
  }
  if (appErr.headers) reply.headers(appErr.headers)
  // Reading the body began and stopped short (a handler streaming it failed, and its pipeline
  // destroyed the stream it read through): node:http drains only a body nobody read, so the
  // rest would sit unread and the client's next request on this connection go unanswered until
  // the keep-alive timeout. Answer, then close. A body nobody touched node:http still drains.
  if (!req.raw.complete && req.raw.readableDidRead) reply.header('connection', 'close')
  void app
  return reply.code(appErr.statusCode).type('application/json; charset=utf-8').send(appErr.toJSON())
}

function translate(err: FastifyError, bodyLimit: number): AppError {
  if (err.validation) {
    const { path, message } = validationMessage(err.validationContext ?? 'request', err.validation as never)
    return kitErrors.invalid_request.with({ details: { path } }, message)
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return kitErrors.payload_too_large(bodyLimit)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? kitErrors.unsupported_media_type.with({ cause: err }, 'for this endpoint')
        : kitErrors.invalid_request.with({ cause: err }, 'Content-Length does not match the body')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return kitErrors.invalid_json('the body is empty')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return kitErrors.invalid_json.with({ cause: err }, err.message)
  }
  if (err instanceof SyntaxError && err.statusCode === 400)
    return kitErrors.invalid_json.with({ cause: err }, err.message)
  if (err.statusCode === 413) return kitErrors.payload_too_large(bodyLimit)
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return new AppError(err.statusCode, 'invalid_request', err.message, { cause: err })
  }
  // The database is down or restarting: the client may retry, and the log says why.
  if (isDatabaseUnavailable(err)) return kitErrors.unavailable.with({ cause: err, headers: RETRY_SOON }, 'the database')
  // A full disk or quota, or a failing one (a file system remounted read-only after a disk error,
  // an I/O error) under a blob, a staged upload, a zone file: nothing the client did, and it may
  // retry once an operator has freed space or mended the disk.
  if (err.code === 'ENOSPC' || err.code === 'EDQUOT' || err.code === 'EROFS' || err.code === 'EIO')
    return kitErrors.unavailable.with({ cause: err, headers: RETRY_SOON }, 'storage')
  return kitErrors.internal.with({ cause: err })
}

// Fastify answers an unknown method on a known path with 404; the design wants 405 with
// `Allow`, so keep each route's pattern and test the path against them.
/** An app's "not found" page and the headers it goes with (its CSP above all). */
export interface NotFoundPage {
  html: string
  headers?: Record<string, string>
}

export type NotFoundPageFn = (
  path: string,
  req: FastifyRequest,
) => NotFoundPage | undefined | Promise<NotFoundPage | undefined>

export function installNotFound(app: HttpApp, page?: NotFoundPageFn) {
  const patterns = new Map<string, { regex: RegExp; methods: Set<string> }>()
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    let entry = patterns.get(route.url)
    if (!entry) {
      const source = route.url
        .split('/')
        .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/')
      entry = { regex: new RegExp(`^${source}$`), methods: new Set() }
      patterns.set(route.url, entry)
    }
    for (const m of methods) entry.methods.add(m)
  })
  app.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split('?')[0] ?? '/'
    const allowed = new Set<string>()
    let route: string | undefined
    for (const [url, { regex, methods }] of patterns) {
      if (!regex.test(path)) continue
      route ??= url
      for (const m of methods) allowed.add(m)
    }
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(', ')
      // The route's pattern, not the path: a path may carry a secret (a hook's token).
      const error = kitErrors.method_not_allowed.with({ headers: { allow } }, req.method, route ?? path)
      return sendError(app, error, req, reply, 0)
    }
    if (page && (req.method === 'GET' || req.method === 'HEAD') && wantsHtml(req.headers.accept)) {
      let answer: NotFoundPage | undefined
      try {
        answer = await page(path, req)
      } catch (err) {
        // The page could not be made (its theme's database is down): the JSON 404 still says it.
        req.log.warn({ err }, 'not-found page failed; answering JSON')
      }
      if (answer !== undefined) {
        if (answer.headers) reply.headers(answer.headers)
        return reply.code(404).type('text/html; charset=utf-8').send(answer.html)
      }
    }
    return sendError(app, kitErrors.not_found(`no route for ${req.method} ${path}`), req, reply, 0)
  })
}

/** Whether a request's Accept names text/html: a browser's navigation does; fetch() and curl ask for any type or for JSON. */
export function wantsHtml(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept)
}
