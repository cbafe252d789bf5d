/**
 * The MCP tools of the spec. A server instance is built for an audience (signed-in user or
 * administrator), not for a caller: each tool reads the caller from the request it serves
 * (the authenticated principal the route put in the request's auth info), so one instance
 * can serve one request after another (mcp/pool.ts). Each tool calls the same service
 * function as its REST twin, so rules, limits and audit records cannot drift.
 * Administrators' tools are registered only on administrators' instances: nobody else
 * sees them in tools/list.
 */
import { AppError, kitErrors } from '@gatehouse/kit'
import { fromJsonSchema, type JsonSchemaType, McpServer } from '@modelcontextprotocol/server'
import type * as z from 'zod'
import { adminDeleteArtifact, adminListArtifacts, adminRevokeShare } from '../admin/service.ts'
import { changeVisibility, getArtifact, getVersionManifest, listArtifacts } from '../artifacts/service.ts'
import type { Principal } from '../auth/principal.ts'
import type { AppContext } from '../context.ts'
import { createShare, revokeOwnShare } from '../shares/service.ts'
import { publishInline } from '../uploads/inline.ts'
import { commitUpload } from '../uploads/publish.ts'
import { authorizeUpload, createUpload } from '../uploads/service.ts'
import { brandingTools } from './branding-tools.ts'
import { rememberSerialized } from './direct.ts'
import { inputs, outputs } from './schemas.ts'

export const SERVER_INFO = { name: 'artsvc', version: '0.1.0' }

type ToolResult = {
  content: { type: 'text'; text: string }[]
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

/** A service result as structured output, or a coded error the agent can act on (isError). */
export async function run(
  ctx: AppContext,
  tool: string,
  fn: () => Promise<Record<string, unknown>>,
  request?: object,
): Promise<ToolResult> {
  try {
    const result = await fn()
    ctx.counters.mcpToolCalls.inc({ tool, result: 'ok' })
    // The text block is the serialized structured content (as the MCP spec asks); the
    // direct answer path reuses the string instead of serializing the result twice.
    const text = JSON.stringify(result)
    if (request) rememberSerialized(request, result, text)
    return { content: [{ type: 'text', text }], structuredContent: result }
  } catch (err) {
    if (!(err instanceof AppError) || err.statusCode >= 500) {
      ctx.counters.mcpToolCalls.inc({ tool, result: 'failed' })
      ctx.logger.error({ err, tool }, 'MCP tool failed')
      const code = err instanceof AppError ? err.code : 'internal'
      const message = err instanceof AppError ? err.message : 'internal error; try again later'
      return { content: [{ type: 'text', text: JSON.stringify({ error: { code, message } }) }], isError: true }
    }
    ctx.counters.mcpToolCalls.inc({ tool, result: 'refused' })
    return { content: [{ type: 'text', text: JSON.stringify(err.toJSON()) }], isError: true }
  }
}

export type DefineTool = <I extends z.ZodType, O extends z.ZodType>(
  name: string,
  config: { title: string; description: string; input: I; output: O; readOnly?: boolean; destructive?: boolean },
  fn: (args: z.output<I>, p: Principal) => Promise<Record<string, unknown>>,
) => void

/** The caller of the request a tool serves: the route authenticates every request first. */
export function callerOf(extra: { http?: { authInfo?: { extra?: Record<string, unknown> } } }): Principal {
  const principal = extra.http?.authInfo?.extra?.principal as Principal | undefined
  if (!principal) throw new TypeError('MCP request without an authenticated principal')
  return principal
}

type StandardJson = {
  validate(value: unknown): unknown
  jsonSchema: { input(o: { target: string }): unknown; output(o: { target: string }): unknown }
}

/**
 * The SDK converts each tool's zod schema to JSON Schema on every instance (to list it, and
 * to check structured output), and the modern protocol leg builds an instance per request.
 * The schemas never change: convert each once per target and keep the result.
 */
const cachedSchemas = new WeakMap<object, object>()
function cached<S extends z.ZodType>(schema: S): S {
  let wrapped = cachedSchemas.get(schema)
  if (!wrapped) {
    const std = schema['~standard'] as unknown as StandardJson
    const memo = (side: 'input' | 'output') => {
      const byTarget = new Map<string, unknown>()
      return (o: { target: string }) => {
        if (!byTarget.has(o.target)) byTarget.set(o.target, std.jsonSchema[side](o))
        return byTarget.get(o.target)
      }
    }
    wrapped = {
      '~standard': { ...schema['~standard'], jsonSchema: { input: memo('input'), output: memo('output') } },
    }
    cachedSchemas.set(schema, wrapped)
  }
  return wrapped as S
}

/**
 * An output schema as the SDK sees it: listed as the same JSON Schema (cached), and the
 * structured content of every call checked against exactly that JSON Schema, which is what
 * clients check it against (the SDK's own validator, AJV, via `fromJsonSchema`), compiled
 * once. zod would check the same rules but copy every object of a long list per call (and
 * it accepts members the advertised schema forbids). Inputs stay zod: they apply defaults.
 */
const outputChecked = new WeakMap<object, object>()
export function outputSchema<S extends z.ZodType>(schema: S): S {
  let wrapped = outputChecked.get(schema)
  if (!wrapped) {
    const listed = cached(schema)['~standard'] as unknown as StandardJson
    let check: StandardJson['validate'] | undefined
    const validate = (value: unknown) => {
      check ??= fromJsonSchema(listed.jsonSchema.output({ target: JSON_SCHEMA_TARGET }) as JsonSchemaType)['~standard']
        .validate as StandardJson['validate']
      return check(value)
    }
    wrapped = { '~standard': { ...listed, validate } }
    outputChecked.set(schema, wrapped)
  }
  return wrapped as S
}
/** The JSON Schema dialect the SDK lists tool schemas in. */
const JSON_SCHEMA_TARGET = 'draft-2020-12'

/** Arguments the input schema refused: handed to the tool, which answers the coded error. */
const REFUSED = Symbol('refused arguments')
type Refused = { [REFUSED]: string }
type Issue = { message: string; path?: readonly (PropertyKey | { key: PropertyKey })[] }

/**
 * An input schema as the SDK sees it: listed as the same JSON Schema (cached), but arguments
 * it refuses reach the tool as a `Refused` value instead of the SDK's own plain-text error
 * ("Input validation error: …"), so a refused call answers the documented `{"error":{code,
 * message}}` body like every other refusal (code `invalid_request`, as REST's).
 */
const inputChecked = new WeakMap<object, object>()
function inputSchema<S extends z.ZodType>(schema: S): S {
  let wrapped = inputChecked.get(schema)
  if (!wrapped) {
    const listed = cached(schema)['~standard'] as unknown as StandardJson
    const original = schema['~standard'].validate as (value: unknown) => unknown
    const answer = (result: { value?: unknown; issues?: readonly Issue[] }) =>
      result.issues && result.issues.length > 0 ? { value: { [REFUSED]: describeIssues(result.issues) } } : result
    const validate = (value: unknown) => {
      const result = original(value) as { value?: unknown; issues?: readonly Issue[] }
      return result instanceof Promise ? result.then(answer) : answer(result)
    }
    wrapped = { '~standard': { ...listed, validate } }
    inputChecked.set(schema, wrapped)
  }
  return wrapped as S
}

/** `title: Too small: expected string to have >=1 characters; artifact: …` (the field, then why). */
function describeIssues(issues: readonly Issue[]): string {
  return issues
    .map((issue) => {
      const path = (issue.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p)).join('.')
      return path ? `${path}: ${issue.message}` : issue.message
    })
    .join('; ')
}

/** Register a tool whose handler runs a service call through `run`. */
function toolDefiner(ctx: AppContext, server: McpServer, admin: boolean): DefineTool {
  return (name, config, fn) => {
    server.registerTool(
      name,
      {
        title: config.title,
        description: config.description,
        inputSchema: inputSchema(config.input),
        outputSchema: outputSchema(config.output),
        annotations: {
          readOnlyHint: config.readOnly ?? false,
          destructiveHint: config.destructive ?? false,
          openWorldHint: false,
        },
      },
      // biome-ignore lint/suspicious/noExplicitAny: the SDK infers the argument type from the schema
      (async (args: any, extra: Parameters<typeof callerOf>[0]) =>
        run(
          ctx,
          name,
          async () => {
            if (args && typeof args === 'object' && REFUSED in args)
              throw kitErrors.invalid_request(`arguments of ${name}: ${(args as Refused)[REFUSED]}`)
            const p = callerOf(extra)
            // An instance serves one audience; the route picks it from the same principal.
            if (admin && !p.isAdmin) throw new TypeError('administrator tools called by a non-administrator')
            return fn(args, p)
          },
          // The request's own auth info object: the direct answer path reuses the text.
          extra.http?.authInfo,
        )) as never,
    )
  }
}

export interface McpLimits {
  /** The largest inline bundle artsvc_publish accepts (bytes). */
  inlineBytes: number
}

/** A server with every tool `audience` may see; the caller comes from each request. */
export function buildMcpServer(ctx: AppContext, audience: { isAdmin: boolean }, limits: McpLimits): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      'artsvc publishes versioned web bundles (HTML, CSS, JavaScript, WASM) and shares them. ' +
      'Publish a page with artsvc_publish (files map or base64 ZIP); larger bundles go through ' +
      'artsvc_create_upload, an HTTP PUT of the ZIP, then artsvc_commit_upload. New artifacts are private: ' +
      'use artsvc_set_visibility or artsvc_share to show them to others.',
  })
  const tool = toolDefiner(ctx, server, false)

  tool(
    'artsvc_list',
    {
      title: 'List artifacts',
      description:
        'List the artifacts you can open: those you own, those shared with you, and those visible to every signed-in account. ' +
        'Each has its id, title, visibility, newest version number, viewer URL and your role.',
      input: inputs.none,
      output: outputs.list,
      readOnly: true,
    },
    (_a, p) => listArtifacts(ctx, p),
  )
  tool(
    'artsvc_get',
    {
      title: 'Get an artifact',
      description:
        'Read one artifact with its versions (newest first), or, with version, that version and its file manifest ' +
        '(path, size, sha256, content type). Unknown and unreadable artifacts both answer artifact_not_found.',
      input: inputs.get,
      output: outputs.get,
      readOnly: true,
    },
    async (a, p) =>
      a.version === undefined
        ? { artifact: await getArtifact(ctx, p, a.artifact) }
        : { version: await getVersionManifest(ctx, p, a.artifact, a.version) },
  )
  tool(
    'artsvc_publish',
    {
      title: 'Publish a bundle',
      description:
        `Publish web content in one call and get its viewer URL. Give either files (path -> text, or {base64} for binary) ` +
        `or bundle_base64 (a ZIP). The bundle must contain the entrypoint (default index.html). ` +
        `Inline bundles are limited to ${limits.inlineBytes} bytes; for larger ones use artsvc_create_upload, ` +
        'PUT the ZIP to its upload_url, then artsvc_commit_upload. With artifact, adds a new version to an artifact you own or edit. ' +
        'New artifacts are private.',
      input: inputs.publish,
      output: outputs.published,
    },
    (a, p) => publishInline(ctx, p, a, limits.inlineBytes),
  )
  tool(
    'artsvc_create_upload',
    {
      title: 'Start a large upload',
      description:
        'Start an upload session for a bundle too large to send inline. Then HTTP PUT the ZIP bytes to upload_url with the ' +
        'header "X-Artsvc-Upload-Token: <upload_token>" (never in the URL) before expires_at, and call artsvc_commit_upload. ' +
        'Bundles up to max_bytes and max_files.',
      input: inputs.createUpload,
      output: outputs.upload,
    },
    (a, p) => createUpload(ctx, p, a),
  )
  tool(
    'artsvc_commit_upload',
    {
      title: 'Publish an upload',
      description:
        'Validate and publish the bundle PUT to an upload session as a new immutable version; answers the viewer URL. ' +
        'Errors: upload_not_received (PUT the ZIP first), bundle_invalid (with a reason), upload_expired (start again).',
      input: inputs.commitUpload,
      output: outputs.published,
    },
    async (a, p) => commitUpload(ctx, p, await authorizeUpload(ctx, a.upload, a.upload_token)),
  )
  tool(
    'artsvc_set_visibility',
    {
      title: 'Set visibility',
      description:
        'Owner only. private: only you and users granted access can view; authenticated: every signed-in account can find and view it.',
      input: inputs.visibility,
      output: outputs.artifact,
    },
    (a, p) => changeVisibility(ctx, p, a.artifact, a.visibility),
  )
  tool(
    'artsvc_share',
    {
      title: 'Create a share link',
      description:
        'Owner only. Create a capability link anyone can open without an account; it pins the newest version unless version ' +
        'or follow_latest says otherwise, and may expire or allow a number of views. The url is shown only now.',
      input: inputs.share,
      output: outputs.share,
    },
    (a, p) => createShare(ctx, p, a.artifact, a),
  )
  tool(
    'artsvc_revoke_share',
    {
      title: 'Revoke a share link',
      description: 'Owner only. Revoke a share link at once: open viewers stop working. Revoking twice is harmless.',
      input: inputs.revokeShare,
      output: outputs.revoked,
      destructive: true,
    },
    (a, p) => revokeOwnShare(ctx, p, a.artifact, a.share),
  )

  brandingTools(ctx, tool, audience.isAdmin ? toolDefiner(ctx, server, true) : undefined)

  if (!audience.isAdmin) return server
  const admin = toolDefiner(ctx, server, true)
  admin(
    'artsvc_admin_list',
    {
      title: 'List every artifact (administrator)',
      description: 'Every active artifact of every owner, with its owner and its active share links.',
      input: inputs.none,
      output: outputs.adminList,
      readOnly: true,
    },
    (_a, p) => adminListArtifacts(ctx, p),
  )
  admin(
    'artsvc_admin_revoke_share',
    {
      title: 'Revoke any share link (administrator)',
      description: 'Revoke any share link by id, whoever owns the artifact. Audited.',
      input: inputs.adminRevokeShare,
      output: outputs.revoked,
      destructive: true,
    },
    (a, p) => adminRevokeShare(ctx, p, a.share),
  )
  admin(
    'artsvc_admin_delete_artifact',
    {
      title: 'Delete an artifact (administrator)',
      description:
        'Soft-delete an artifact: hidden from everyone at once and all its share links revoked; stored files stay for operators. Audited.',
      input: inputs.adminDeleteArtifact,
      output: outputs.deleted,
      destructive: true,
    },
    (a, p) => adminDeleteArtifact(ctx, p, a.artifact),
  )
  return server
}
