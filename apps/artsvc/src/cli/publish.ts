/**
 * `artsvc publish [--title T] --zip FILE|DIR [--artifact ID] [--entrypoint index.html]`:
 * create an upload session, stream the ZIP with the upload token, commit, print the URL.
 * A folder is zipped on the fly and linked to its artifact like a Netlify linked site: the
 * first publish writes `.artsvc.json` ({url, artifact}) in the folder (never uploaded), and
 * later publishes of the folder to the same URL add a version to that artifact.
 */
import { createReadStream, readFileSync, writeFileSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { createTlsAgent, loadTlsMaterial } from '@gatehouse/kit'
import { Agent, type Dispatcher, request } from 'undici'
import type { PublishConfig } from '../config.ts'
import { ID_PATTERN } from '../id-pattern.ts'
import { PublishError, PublishUsageError, readAnswer, stringField } from './answers.ts'
import { fileErrorWords } from './file-errors.ts'
import { ProgressBar } from './progress.ts'
import { LINK_FILE, zipFolder } from './zip-folder.ts'

export { PublishError, PublishUsageError }

interface Link {
  url: string
  artifact: string
}

const ID = new RegExp(ID_PATTERN)

/**
 * The artifact the folder is linked to on this server, if any. A link file that cannot be read
 * or is not one stops the publish: ignoring it would publish a new artifact and write over the
 * only record of the old one (the folder's link), when the user meant to add a version.
 */
function readLink(dir: string, url: string): string | undefined {
  const file = join(dir, LINK_FILE)
  const fix = 'fix it, delete it to publish a new artifact, or give --artifact'
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    // No link yet (a directory of that name is no link either: publish, and warn when linking fails).
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'EISDIR') return undefined
    throw new PublishError(`cannot read the link file ${file}: ${fileErrorWords(err)}; ${fix}`)
  }
  let link: Partial<Link> | undefined
  try {
    link = JSON.parse(text) as Partial<Link>
  } catch {
    link = undefined
  }
  if (typeof link !== 'object' || link === null || typeof link.url !== 'string' || typeof link.artifact !== 'string')
    throw new PublishError(`the link file ${file} is not {"url": …, "artifact": …}; ${fix}`)
  if (link.url !== url) return undefined
  if (!ID.test(link.artifact))
    throw new PublishError(
      `the link file ${file} names ${JSON.stringify(link.artifact)}, which is not an artifact id; ${fix}`,
    )
  return link.artifact
}

async function call(dispatcher: Dispatcher, url: URL, options: Parameters<typeof request>[1]) {
  let res: Awaited<ReturnType<typeof request>>
  try {
    res = await request(url, { ...options, dispatcher, maxRedirections: 0 } as never)
  } catch (err) {
    const e = err as { code?: string; message: string; cause?: { code?: string; message?: string } }
    throw new PublishError(
      `cannot reach ${url.origin}: ${e.cause?.code ?? e.code ?? ''} ${e.cause?.message ?? e.message}`
        .replace(/\s+/g, ' ')
        .trim(),
    )
  }
  return readAnswer(url, res)
}

export async function publish(config: PublishConfig, stderr: NodeJS.WriteStream, isTerminal: boolean): Promise<string> {
  const source = await stat(config.zip).catch((err: Error) => {
    throw new PublishError(`cannot read ${config.zip}: ${fileErrorWords(err)}`)
  })
  const folder = source.isDirectory() ? config.zip : undefined
  if (!folder && !source.isFile()) throw new PublishError(`cannot read ${config.zip}: not a ZIP file or a folder`)
  let zipped: Buffer | undefined
  try {
    zipped = folder ? zipFolder(folder) : undefined
  } catch (err) {
    throw new PublishError(`cannot zip the folder ${config.zip}: ${fileErrorWords(err, true)}`)
  }
  const size = zipped ? zipped.length : source.size
  const base = new URL(config.url)
  const linked = config.artifact === undefined && folder ? readLink(folder, base.origin) : undefined
  const artifactId = config.artifact ?? linked
  if (!artifactId && config.title === undefined)
    throw new PublishUsageError(
      `--title: required for a new artifact (a new version, of a linked folder or --artifact, keeps the artifact's title)`,
    )
  const dispatcher: Dispatcher =
    config.clientCert || config.caFile
      ? // The kit's PEM loader: a missing or non-PEM file is one line naming it (StartupError, exit 1).
        createTlsAgent(
          loadTlsMaterial({
            ...(config.caFile ? { ca: config.caFile } : {}),
            ...(config.clientCert ? { cert: config.clientCert, key: config.clientKey! } : {}),
          }),
        )
      : new Agent({ headersTimeout: 120_000, bodyTimeout: 120_000 })
  const auth = { authorization: `Bearer ${config.token}` }
  // The link names an artifact since deleted, or one this account may not publish to: say where the id came from.
  const fromLink = (err: Error): never => {
    if (linked && / (artifact_not_found|access_denied): /.test(err.message))
      throw new PublishError(
        `${err.message} (artifact ${linked}, from the link file ${join(folder!, LINK_FILE)}: delete that file to publish a new artifact, or give --artifact)`,
      )
    throw err
  }
  try {
    // A new version keeps the artifact's title and entrypoint unless told otherwise, as the
    // browser's "New version…" does: republishing a folder needs no flag but --zip.
    let { title, entrypoint } = config
    if (artifactId && (title === undefined || entrypoint === undefined)) {
      const at = new URL(`/api/v1/artifacts/${encodeURIComponent(artifactId)}`, base)
      const current = await call(dispatcher, at, { method: 'GET', headers: auth }).catch(fromLink)
      title ??= stringField(at, current, 'title')
      entrypoint ??= stringField(at, current, 'entrypoint')
    }
    const session = await call(dispatcher, new URL('/api/v1/artifacts/uploads', base), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        title,
        entrypoint: entrypoint ?? 'index.html',
        ...(artifactId ? { artifact: artifactId } : {}),
      }),
    }).catch(fromLink)
    const created = new URL('/api/v1/artifacts/uploads', base)
    const token = stringField(created, session, 'upload_token')
    const uploadPath = new URL(stringField(created, session, 'upload_url')).pathname
    const showBar = config.progress === 'always' || (config.progress === 'auto' && isTerminal)
    const bar = showBar ? new ProgressBar(size, stderr) : undefined
    const meter = new Transform({
      transform(chunk: Buffer, _e, done) {
        bar?.add(chunk.length)
        done(null, chunk)
      },
    })
    await call(dispatcher, new URL(uploadPath, base), {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': token, 'content-type': 'application/zip', 'content-length': String(size) },
      body: (zipped ? Readable.from([zipped]) : createReadStream(config.zip)).pipe(meter),
    })
    bar?.finish()
    const id = stringField(created, session, 'id')
    const committed = await call(dispatcher, new URL(`/api/v1/uploads/${encodeURIComponent(id)}/commit`, base), {
      method: 'POST',
      headers: { ...auth, 'x-artsvc-upload-token': token },
    })
    const artifact = committed.artifact as { id: string; url: string }
    const version = committed.version as { number: number }
    stderr.write(`published version ${version.number}\n`)
    if (folder) {
      // The version is published whatever happens here: say so, and still print its URL.
      const link: Link = { url: base.origin, artifact: artifact.id }
      const file = join(folder, LINK_FILE)
      try {
        writeFileSync(file, `${JSON.stringify(link, null, 2)}\n`)
      } catch (err) {
        stderr.write(
          `artsvc: warning: cannot link the folder to artifact ${artifact.id} (${fileErrorWords(err, true)}); publish it again with --artifact ${artifact.id} to add a version\n`,
        )
      }
    }
    return artifact.url
  } finally {
    await dispatcher.close()
  }
}
