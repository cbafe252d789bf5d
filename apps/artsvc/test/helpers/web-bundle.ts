/** A real web bundle: ES module scripts with relative imports, WASM loaded by fetch, localStorage. */
import { buildZip } from './zip-builder.ts'

// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
export const ADD_WASM = Buffer.from([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, 0x03, 0x02,
  0x01, 0x00, 0x07, 0x07, 0x01, 0x03, 0x61, 0x64, 0x64, 0x00, 0x00, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x20, 0x00, 0x20,
  0x01, 0x6a, 0x0b,
])

const INDEX = `<!doctype html>
<html><head><meta charset="utf-8"><title>Web bundle</title><link rel="stylesheet" href="style.css"></head>
<body><h1>Bundle</h1><pre id="result">pending</pre>
<script type="module" src="./js/main.js"></script></body></html>`

const MAIN = `import { greet } from './greet.js'
import { toJson } from '../lib/format.js'
const out = { module: greet('sandbox'), origin: self.origin }
try {
  localStorage.setItem('visits', '1')
  out.storage = localStorage.getItem('visits')
} catch (e) { out.storage = 'threw ' + e.name }
try { out.cookie = document.cookie } catch (e) { out.cookie = 'threw ' + e.name }
try {
  const { instance } = await WebAssembly.instantiateStreaming(fetch(new URL('../lib/add.wasm', import.meta.url)))
  out.wasm = instance.exports.add(2, 3)
} catch (e) { out.wasm = 'failed ' + e }
try { await fetch(${JSON.stringify('__PUBLIC__')} + '/api/v1/me'); out.escape = 'reached' } catch { out.escape = 'blocked' }
document.getElementById('result').textContent = toJson(out)
`

export function webBundle(publicOrigin: string): Buffer {
  return buildZip([
    { name: 'index.html', data: INDEX },
    { name: 'style.css', data: 'h1 { color: rgb(1, 2, 3) }' },
    { name: 'js/main.js', data: MAIN.replace('__PUBLIC__', publicOrigin) },
    { name: 'js/greet.js', data: "export const greet = (who) => 'hello ' + who\n" },
    { name: 'lib/format.js', data: 'export const toJson = (v) => JSON.stringify(v)\n' },
    { name: 'lib/add.wasm', data: ADD_WASM, method: 0 },
  ])
}
