/**
 * Discoverable APIs: `/docs` (Swagger UI over the app's own `/openapi.json`), the real version
 * of an app from its package.json, and validation messages that say what is allowed.
 */
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

/**
 * Serve Swagger UI at `/docs` for the document @fastify/swagger builds (register it after
 * @fastify/swagger). The page loads only its own scripts, so a strict CSP still applies.
 * @example await registerDocs(app)
 */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true, docExpansion: 'list' },
    staticCSP: true,
  })
}

interface ValidationIssue {
  keyword: string
  instancePath: string
  message?: string
  params: Record<string, unknown>
}

const list = (values: unknown[]) => values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')

/**
 * One sentence for a failed request validation, naming the field and what it accepts
 * (`body.severity must be one of info, warning, critical`), from Ajv's error list.
 */
export function validationMessage(where: string, issues: ValidationIssue[]): { path: string; message: string } {
  const first = issues[0]
  const pathOf = (i: ValidationIssue | undefined) =>
    i?.instancePath ? `${where}${i.instancePath.replaceAll('/', '.')}` : where
  if (!first) return { path: where, message: `${where} is invalid` }
  // A union of literals (TypeBox Union of Literal) fails as one `const` error per branch
  // followed by `anyOf`: report the allowed values of the branches at the first failing path.
  const consts = issues.filter((i) => i.keyword === 'const' && i.instancePath === first.instancePath)
  if (consts.length > 0 && issues.some((i) => i.keyword === 'anyOf' && i.instancePath === first.instancePath)) {
    return {
      path: pathOf(first),
      message: `${pathOf(first)} must be one of ${list(consts.map((i) => i.params.allowedValue))}`,
    }
  }
  const path = pathOf(first)
  const p = first.params
  switch (first.keyword) {
    case 'required': {
      const field = `${path === where ? where : path}.${String(p.missingProperty)}`
      return { path: field, message: `${field} is required` }
    }
    case 'additionalProperties':
      return { path, message: `${path} has unknown field ${JSON.stringify(p.additionalProperty)}` }
    case 'enum':
      return { path, message: `${path} must be one of ${list(p.allowedValues as unknown[])}` }
    case 'const':
      return { path, message: `${path} must be ${list([p.allowedValue])}` }
    case 'type':
      return { path, message: `${path} must be ${/^[aeiou]/.test(String(p.type)) ? 'an' : 'a'} ${String(p.type)}` }
    case 'minLength':
      return {
        path,
        message:
          p.limit === 1 ? `${path} must not be empty` : `${path} must be at least ${String(p.limit)} characters long`,
      }
    case 'maxLength':
      return { path, message: `${path} must be at most ${String(p.limit)} characters long` }
    case 'minimum':
    case 'maximum':
      return {
        path,
        message: `${path} must be ${first.keyword === 'minimum' ? 'at least' : 'at most'} ${String(p.limit)}`,
      }
    case 'minItems':
    case 'maxItems':
      return {
        path,
        message: `${path} must have ${first.keyword === 'minItems' ? 'at least' : 'at most'} ${String(p.limit)} items`,
      }
    case 'pattern':
      return { path, message: `${path} must match the pattern ${String(p.pattern)}` }
    case 'format':
      return { path, message: `${path} must be a valid ${String(p.format)}` }
    default:
      return { path, message: `${path} ${first.message ?? 'is invalid'}` }
  }
}

/** Options that complete an app's OpenAPI document (`createHttpApp({ openapi: { ... } })`). */
export interface OpenApiExtras {
  /** The app's `errors` map (from `defineErrors`): each route documents the codes by status. */
  errors?: Record<string, { status: number }>
  /** OpenAPI security schemes, e.g. `{ bearer: { type: 'http', scheme: 'bearer' } }`. */
  securitySchemes?: Record<string, unknown>
  /**
   * Which of the schemes a route accepts, by method and URL (`[{ bearer: [] }]`; two entries mean
   * either; `[]` marks a public route). Routes it returns undefined for, and routes whose schema
   * names `security` itself, are left as they are. One rule per app, next to its auth code,
   * instead of a line in every route.
   */
  security?: (route: { method: string; url: string }) => Array<Record<string, string[] | undefined>> | undefined
}

const ERROR_BODY = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
  },
}

/**
 * The parts @fastify/swagger takes to document errors on every route: a response per error
 * status listing the codes the app (and the kit) may answer with, in the one JSON error shape.
 */
export function openApiErrorParts(kit: Record<string, { status: number }>, extras: OpenApiExtras) {
  const byStatus = new Map<number, string[]>()
  for (const [code, def] of Object.entries({ ...kit, ...extras.errors })) {
    if (code === 'internal') continue
    byStatus.set(def.status, [...(byStatus.get(def.status) ?? []), code])
  }
  const statuses = [...byStatus.keys()].sort((a, b) => a - b)
  return {
    components: {
      schemas: { Error: ERROR_BODY },
      ...(extras.securitySchemes ? { securitySchemes: extras.securitySchemes } : {}),
    },
    transform({
      schema,
      url,
      route,
    }: {
      schema: Record<string, unknown> | undefined
      url: string
      route?: { method: string | string[] }
    }) {
      // A route without a schema is still documented (by @fastify/swagger), so it gets its errors
      // and security too; only hidden routes are left alone.
      if (schema?.hide) return { schema, url }
      schema ??= {}
      const method = [route?.method ?? 'GET'].flat()[0]!.toUpperCase()
      const security = schema.security === undefined ? extras.security?.({ method, url }) : undefined
      const response = { ...((schema.response as Record<string, unknown>) ?? {}) }
      for (const status of statuses) {
        if (String(status) in response) continue
        response[String(status)] = {
          description: `error codes: ${byStatus.get(status)!.sort().join(', ')}`,
          ...ERROR_BODY,
        }
      }
      response['500'] ??= { description: 'error code: internal', ...ERROR_BODY }
      return { schema: { ...schema, response, ...(security ? { security } : {}) }, url }
    },
  }
}
