// Publish from the browser: drop (or choose) a ZIP or a folder, pick the entrypoint, watch
// the upload progress, get the new version. The three REST steps are the same as the CLI's:
// create the upload session, PUT the bytes with the upload token header, commit.
import { api, errorFrom, explain } from './api.js'
import { bytes, field, fill, h } from './dom.js'
import { buildZip, readFolder, zipFileNames } from './zip.js'

const LINK_FILE = '.artsvc.json' // the CLI's folder link file is never uploaded

/** The previous version's entrypoint when the new bundle has it, else index.html, else the first page. */
function defaultEntrypoint(names, previous) {
  if (previous && names.includes(previous)) return previous
  return names.find((n) => n === 'index.html') ?? names.find((n) => /\.html?$/i.test(n)) ?? names[0] ?? ''
}

async function fromZip(file) {
  return {
    blob: file,
    names: zipFileNames(await file.arrayBuffer()),
    source: file.name,
    title: file.name.replace(/\.zip$/i, ''),
  }
}

async function fromFiles(list, folderName) {
  const files = list.filter((f) => f.path !== LINK_FILE && !f.path.endsWith(`/${LINK_FILE}`))
  const entries = await Promise.all(
    files.map(async (f) => ({ path: f.path, data: new Uint8Array(await f.file.arrayBuffer()) })),
  )
  entries.sort((a, b) => (a.path < b.path ? -1 : 1))
  return {
    blob: buildZip(entries),
    names: entries.map((e) => e.path),
    source: `folder ${folderName}`,
    title: folderName,
  }
}

/** What was dropped: one ZIP file, or one folder (read through the entry API). */
async function fromDrop(dataTransfer) {
  const items = [...(dataTransfer.items ?? [])]
  const dir = items.map((i) => i.webkitGetAsEntry?.()).find((e) => e?.isDirectory)
  if (dir) return fromFiles(await readFolder(dir), dir.name)
  const file = dataTransfer.files[0]
  if (!file) throw new Error('nothing to publish was dropped')
  return fromZip(file)
}

function putWithProgress(url, token, blob, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open('PUT', url)
    xhr.setRequestHeader('x-artsvc-upload-token', token)
    xhr.setRequestHeader('content-type', 'application/zip')
    xhr.upload.addEventListener('progress', (e) => e.lengthComputable && onProgress(e.loaded / e.total))
    xhr.addEventListener('load', async () =>
      xhr.status === 200 ? resolve() : reject(await errorFrom(xhr.status, xhr.responseText)),
    )
    xhr.addEventListener('error', () => reject(new Error('the upload was interrupted; try again')))
    xhr.send(blob)
  })
}

/**
 * The publish panel. `artifact` (optional) publishes a new version of that artifact;
 * `onPublished(result)` runs after a successful commit.
 */
export function publishPanel({ artifact, title, entrypoint, onPublished } = {}) {
  let bundle
  let busy = false
  const alert = h('p', { class: 'error-text', role: 'alert' })
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' })
  const progress = h('progress', { max: 100, value: 0, hidden: true, 'aria-label': 'Upload progress' })
  const zipInput = h('input', { type: 'file', accept: '.zip,application/zip' })
  const folderInput = h('input', { type: 'file', webkitdirectory: true, multiple: true })
  const titleInput = h('input', { type: 'text', required: true, maxlength: 200, value: title ?? '' })
  const entrySelect = h('select', { required: true })
  const publish = h('button', { type: 'submit', class: 'primary' }, artifact ? 'Publish new version' : 'Publish')
  const details = h('div', { class: 'bundle-details', hidden: true })

  const zone = h(
    'div',
    { class: 'dropzone' },
    h('p', { class: 'drop-hint' }, 'Drop a ZIP file or a folder here, or choose one:'),
    h('div', { class: 'choosers' }, field('ZIP file', zipInput), field('Folder', folderInput)),
  )

  const reset = (message) => {
    fill(alert, message ?? '')
    fill(status, '')
  }

  const prepare = async (load) => {
    reset()
    details.hidden = true
    try {
      bundle = await load()
    } catch (err) {
      fill(alert, explain(err))
      return
    }
    if (bundle.names.length === 0) {
      fill(alert, `${bundle.source} has no files (is it a ZIP?)`)
      return
    }
    fill(
      entrySelect,
      bundle.names.map((n) => h('option', { value: n }, n)),
    )
    entrySelect.value = defaultEntrypoint(bundle.names, entrypoint)
    if (!titleInput.value) titleInput.value = bundle.title
    fill(
      status,
      `${bundle.source}: ${bundle.names.length} file${bundle.names.length === 1 ? '' : 's'}, ${bytes(bundle.blob.size)}`,
    )
    details.hidden = false
    titleInput.focus()
  }

  zone.addEventListener('dragover', (e) => {
    e.preventDefault()
    zone.classList.add('over')
  })
  zone.addEventListener('dragleave', () => zone.classList.remove('over'))
  zone.addEventListener('drop', (e) => {
    e.preventDefault()
    zone.classList.remove('over')
    void prepare(() => fromDrop(e.dataTransfer))
  })
  zipInput.addEventListener('change', () => zipInput.files[0] && prepare(() => fromZip(zipInput.files[0])))
  folderInput.addEventListener('change', () => {
    const files = [...folderInput.files]
    if (files.length === 0) return
    const root = files[0].webkitRelativePath.split('/')[0]
    void prepare(() =>
      fromFiles(
        files.map((file) => ({ path: file.webkitRelativePath.split('/').slice(1).join('/'), file })),
        root,
      ),
    )
  })

  const form = h('form', { class: 'publish', novalidate: true }, zone, details, progress, status, alert)
  fill(
    details,
    field('Title', titleInput),
    field('Entrypoint', entrySelect, 'the page the viewer opens'),
    h('div', { class: 'actions' }, publish),
  )

  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    if (!bundle || busy) return
    if (!titleInput.value.trim()) {
      fill(alert, 'give the artifact a title')
      titleInput.focus()
      return
    }
    reset()
    // aria-disabled, not disabled: a disabled button loses the focus, and a keyboard user who
    // pressed it would be left on the page's body while the upload runs.
    busy = true
    publish.setAttribute('aria-disabled', 'true')
    progress.hidden = false
    progress.value = 0
    try {
      fill(status, 'Starting the upload…')
      const session = await api('POST', '/api/v1/artifacts/uploads', {
        title: titleInput.value.trim(),
        entrypoint: entrySelect.value,
        ...(artifact ? { artifact } : {}),
      })
      if (bundle.blob.size > session.max_bytes)
        throw new Error(
          `the bundle is ${bytes(bundle.blob.size)}; this server accepts at most ${bytes(session.max_bytes)}`,
        )
      await putWithProgress(session.upload_url, session.upload_token, bundle.blob, (f) => {
        progress.value = Math.round(f * 100)
        fill(status, `Uploading… ${Math.round(f * 100)}%`)
      })
      fill(status, 'Checking the bundle…')
      const res = await fetch(new URL(session.commit_url).pathname, {
        method: 'POST',
        headers: { 'x-artsvc-upload-token': session.upload_token, accept: 'application/json' },
      })
      const text = await res.text()
      if (!res.ok) throw await errorFrom(res.status, text)
      const result = JSON.parse(text)
      progress.value = 100
      const open = h('a', { href: `/a/${encodeURIComponent(result.artifact.id)}` }, 'Open it')
      fill(status, `Published version ${result.version.number} of “${result.artifact.title}”. `, open)
      // The bundle is spent: pressing Publish again must not make a second artifact of it. The
      // form is ready for the next bundle, and the focus goes to the result.
      bundle = undefined
      details.hidden = true
      zipInput.value = ''
      folderInput.value = ''
      titleInput.value = title ?? ''
      open.focus()
      onPublished?.(result)
    } catch (err) {
      progress.hidden = true
      fill(status, '')
      fill(alert, `Not published: ${explain(err)}`)
    } finally {
      busy = false
      publish.removeAttribute('aria-disabled')
    }
  })
  return form
}
