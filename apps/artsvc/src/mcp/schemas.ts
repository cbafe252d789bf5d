/**
 * Input and output schemas of the MCP tools (zod 4, which the SDK turns into JSON Schema
 * for `tools/list`). Inputs are strict: an unknown argument is refused, not ignored.
 * Outputs describe the same JSON the REST API answers with.
 */
import * as z from 'zod'

export const artifactId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{16}$/)
  .describe('Artifact id (16 characters), as returned by artsvc_list or artsvc_publish')
export const shareId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{16}$/)
  .describe('Share id (16 characters), as returned by artsvc_share')
const title = z.string().min(1).max(200).describe('Artifact title shown in the library (1-200 characters)')
const entrypoint = z
  .string()
  .min(1)
  .max(1024)
  .describe('File opened by the viewer, a relative path inside the bundle (default index.html)')
const time = z.string().describe('RFC 3339 UTC time')

export const artifactOut = z.object({
  id: z.string(),
  title: z.string(),
  visibility: z.enum(['private', 'authenticated']),
  latest_version: z.number().int(),
  created_at: time,
  updated_at: time,
  url: z.string().describe('Viewer URL on the management origin (needs sign-in)'),
  owner: z.string().optional().describe('Owner subject'),
  role: z.enum(['owner', 'editor', 'viewer', 'reader']).optional().describe('Your role on this artifact'),
  latest_version_at: time.nullable().optional().describe('When the newest version was published (in lists)'),
})

export const versionOut = z.object({
  number: z.number().int(),
  title: z.string(),
  entrypoint: z.string(),
  file_count: z.number().int(),
  total_bytes: z.number().int(),
  zip_sha256: z.string(),
  created_at: time,
})

export const shareOut = z.object({
  id: z.string(),
  artifact: z.string(),
  version: z.number().int().nullable().describe('Pinned version number, or null when following the newest'),
  follow_latest: z.boolean(),
  label: z.string().nullable(),
  status: z.enum(['active', 'revoked', 'expired', 'exhausted']),
  created_at: time,
  expires_at: time.nullable(),
  max_views: z.number().int().nullable(),
  views: z.number().int(),
  revoked_at: time.nullable(),
})

export const publishedOut = z.object({
  artifact: z.object({ id: z.string(), title: z.string(), url: z.string() }),
  version: z.object({
    number: z.number().int(),
    entrypoint: z.string(),
    file_count: z.number().int(),
    total_bytes: z.number().int(),
    created_at: time,
  }),
})

export const inputs = {
  none: z.strictObject({}),
  get: z.strictObject({
    artifact: artifactId,
    version: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Version number: when given, answer that version with its file manifest instead of the artifact'),
  }),
  publish: z.strictObject({
    title,
    entrypoint: entrypoint.default('index.html'),
    artifact: artifactId
      .optional()
      .describe('Publish a new version of this artifact (owner or editor) instead of a new one'),
    bundle_base64: z.string().optional().describe('The ZIP bundle, base64-encoded. Give this or files, not both'),
    files: z
      .record(
        z.string().min(1).max(1024),
        z.union([
          z.string().describe('UTF-8 text content'),
          z.strictObject({ base64: z.string().describe('Binary content, base64-encoded') }),
        ]),
      )
      .optional()
      .describe('Map of relative file path to content, e.g. {"index.html": "<h1>Hi</h1>"}. Give this or bundle_base64'),
  }),
  createUpload: z.strictObject({
    title,
    entrypoint: entrypoint.default('index.html'),
    artifact: artifactId.optional().describe('Publish a new version of this artifact (owner or editor)'),
  }),
  commitUpload: z.strictObject({
    upload: z
      .string()
      .regex(/^[A-Za-z0-9_-]{16}$/)
      .describe('The id returned by artsvc_create_upload'),
    upload_token: z.string().min(1).max(256).describe('The upload_token returned by artsvc_create_upload'),
  }),
  visibility: z.strictObject({
    artifact: artifactId,
    visibility: z
      .enum(['private', 'authenticated'])
      .describe('private: owner and granted users only; authenticated: every signed-in account can find and view it'),
  }),
  share: z.strictObject({
    artifact: artifactId,
    version: z.number().int().min(1).optional().describe('Version to pin (default: the newest now)'),
    follow_latest: z.boolean().optional().describe('Follow the newest version instead of pinning one'),
    // Any offset, as REST accepts (the service stores UTC): agents often write +00:00 or local time.
    expires_at: z.iso
      .datetime({ offset: true })
      .optional()
      .describe(
        'RFC 3339 expiry in the future, e.g. 2027-01-31T18:00:00Z or 2027-01-31T19:00:00+01:00; omit for no expiry',
      ),
    max_views: z.number().int().min(1).max(1_000_000_000).optional().describe('How many times the link can be opened'),
    label: z.string().max(200).optional().describe('Note for yourself, e.g. who received the link'),
  }),
  revokeShare: z.strictObject({ artifact: artifactId, share: shareId }),
  adminRevokeShare: z.strictObject({ share: shareId }),
  adminDeleteArtifact: z.strictObject({ artifact: artifactId }),
}

export const outputs = {
  list: z.object({ artifacts: z.array(artifactOut) }),
  get: z.object({
    artifact: artifactOut
      .extend({ entrypoint: z.string().optional(), versions: z.array(versionOut) })
      .optional()
      .describe('The artifact with its versions, newest first (when no version was asked for)'),
    version: versionOut
      .extend({
        files: z.array(
          z.object({ path: z.string(), size: z.number().int(), sha256: z.string(), content_type: z.string() }),
        ),
      })
      .optional()
      .describe('The asked-for version with its file manifest'),
  }),
  published: publishedOut,
  upload: z.object({
    id: z.string(),
    upload_url: z.string().describe('PUT the ZIP bytes here with header X-Artsvc-Upload-Token: <upload_token>'),
    commit_url: z.string(),
    upload_token: z.string(),
    expires_at: time,
    max_bytes: z.number().int(),
    max_files: z.number().int(),
  }),
  artifact: artifactOut,
  share: shareOut.extend({ url: z.string().describe('The capability link; shown once, anyone holding it can view') }),
  revoked: z.object({ share: z.string(), artifact: z.string(), revoked: z.literal(true) }),
  adminList: z.object({ artifacts: z.array(artifactOut.extend({ shares: z.array(shareOut) })) }),
  deleted: z.object({ artifact: z.string(), deleted: z.literal(true), shares_revoked: z.number().int() }),
}
