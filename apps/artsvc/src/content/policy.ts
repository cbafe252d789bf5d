/**
 * Response policy of the content origin. The CSP carries `sandbox` (without
 * allow-same-origin), so a ticket URL opened directly is as isolated as in the viewer's
 * iframe. Sandboxed documents have an opaque origin: module scripts and `fetch` from them
 * are CORS requests from `null`, hence `Access-Control-Allow-Origin: *` (no credentials
 * are ever accepted here). Network access is limited to the content origin itself.
 */
import { IFRAME_SANDBOX } from '../viewer/page.ts'

/**
 * Headers of every response from the content host, errors included: errors must stay
 * readable to bundles (opaque-origin CORS), and never be sniffed into something else.
 */
export const CONTENT_HOST_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'x-content-type-options': 'nosniff',
}

export function contentSecurityPolicy(contentOrigin: string, publicOrigin: string): string {
  const self = contentOrigin
  return [
    `sandbox ${IFRAME_SANDBOX}`,
    "default-src 'none'",
    `script-src ${self} 'unsafe-inline' 'wasm-unsafe-eval' blob:`,
    `style-src ${self} 'unsafe-inline'`,
    `img-src ${self} data: blob:`,
    `font-src ${self} data:`,
    `media-src ${self} data: blob:`,
    `connect-src ${self}`,
    `worker-src ${self} blob:`,
    `frame-src ${self}`,
    `manifest-src ${self}`,
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${publicOrigin}`,
  ].join('; ')
}

/** Served at /__artsvc/storage-shim.js and loaded first by every HTML file: an in-memory
 * localStorage/sessionStorage where the opaque origin makes the real ones throw. */
export const STORAGE_SHIM = `(() => {
  class MemoryStorage {
    #m = new Map()
    get length() { return this.#m.size }
    key(i) { return [...this.#m.keys()][i] ?? null }
    getItem(k) { k = String(k); return this.#m.has(k) ? this.#m.get(k) : null }
    setItem(k, v) { this.#m.set(String(k), String(v)) }
    removeItem(k) { this.#m.delete(String(k)) }
    clear() { this.#m.clear() }
  }
  for (const name of ['localStorage', 'sessionStorage']) {
    try { void window[name].length } catch {
      try { Object.defineProperty(window, name, { value: new MemoryStorage(), configurable: true, enumerable: true }) } catch {}
    }
  }
})()
`

export const SHIM_TAG = Buffer.from('<script src="/__artsvc/storage-shim.js"></script>')

/** Put the shim first, after a doctype when there is one (so the page stays in standards mode). */
export function injectShim(html: Buffer): Buffer {
  const head = html.subarray(0, 1024).toString('latin1')
  const m = /^(?:\xef\xbb\xbf)?\s*<!doctype[^>]*>/i.exec(head)
  const at = m ? m[0].length : 0
  return Buffer.concat([html.subarray(0, at), SHIM_TAG, html.subarray(at)])
}
