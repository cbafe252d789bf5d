/**
 * Publishing in one call (MCP `artsvc_publish`): the bundle comes inline, as base64 ZIP
 * bytes or as a map of file paths to contents. It takes exactly the path of the upload
 * flow (create the session, receive the bundle, commit), so the rules, limits, viewer
 * grants and audit records are the same; only the transport differs. Bundles above the
 * inline limit are refused with a message naming the upload pair.
 */
import { Readable } from 'node:stream'
import type { Principal } from '../auth/principal.ts'
import { writeZip } from '../bundles/zip-writer.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { commitUpload } from './publish.ts'
import { createUpload, receiveBundle } from './service.ts'
import { getUpload } from './store.ts'

export type InlineFile = string | { base64: string }

export interface InlinePublish {
  title: string
  entrypoint: string
  artifact?: string | undefined
  bundle_base64?: string | undefined
  files?: Record<string, InlineFile> | undefined
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function decodeBase64(value: string, what: string): Buffer {
  if (value.length % 4 !== 0 || !BASE64.test(value)) throw errors.bundle_invalid(`${what} is not valid base64`)
  return Buffer.from(value, 'base64')
}

/** Bytes of the inline bundle (the ZIP as sent, or the one built from the file map). */
export function inlineBundle(input: InlinePublish, limit: number): Buffer {
  const given = (input.bundle_base64 !== undefined ? 1 : 0) + (input.files !== undefined ? 1 : 0)
  if (given !== 1) throw errors.bundle_invalid('give exactly one of bundle_base64 and files')
  // Cheap bound before decoding: base64 holds 3 bytes per 4 characters.
  if (input.bundle_base64 !== undefined) {
    if ((input.bundle_base64.length / 4) * 3 > limit + 2) throw errors.inline_bundle_too_large(limit)
    const zip = decodeBase64(input.bundle_base64, 'bundle_base64')
    if (zip.length > limit) throw errors.inline_bundle_too_large(limit)
    return zip
  }
  let total = 0
  const files = Object.entries(input.files ?? {}).map(([path, content]) => {
    const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : decodeBase64(content.base64, path)
    total += data.length
    if (total > limit) throw errors.inline_bundle_too_large(limit)
    return { path, data }
  })
  if (files.length === 0) throw errors.bundle_invalid('the file map is empty')
  if (files.length > 65_535) throw errors.bundle_invalid('too many files')
  const zip = writeZip(files)
  if (zip.length > limit) throw errors.inline_bundle_too_large(limit)
  return zip
}

export async function publishInline(ctx: AppContext, principal: Principal, input: InlinePublish, limit: number) {
  const zip = inlineBundle(input, limit)
  const session = await createUpload(ctx, principal, {
    title: input.title,
    entrypoint: input.entrypoint,
    artifact: input.artifact,
  })
  const open = await getUpload(ctx.database.db, session.id)
  if (!open) throw errors.upload_not_received()
  await receiveBundle(ctx, open, Readable.from([zip]), zip.length)
  const received = await getUpload(ctx.database.db, session.id)
  if (!received) throw errors.upload_not_received()
  return commitUpload(ctx, principal, received)
}
