/**
 * Which npm packages a command loads: runs `node <args>` with a module-resolution hook that
 * prints each package the first time something resolves into it. CLIs use it to check that
 * `--help` and list commands stay light (no Fastify, undici or pg) without timing anything.
 */
import { spawn } from 'node:child_process'

const HOOK = `
import { registerHooks } from 'node:module'
const seen = new Set()
registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context)
    const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(r.url)
    if (m && !seen.has(m[1])) {
      seen.add(m[1])
      process.stderr.write('@@loaded ' + m[1] + '\\n')
    }
    return r
  },
})
`

/** Run `node ...args` and return its exit code, the packages it loaded (sorted) and its other stderr. */
export function loadedPackages(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; packages: string[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(HOOK)}`, ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (c) => (err += c))
    child.on('close', (code) => {
      const lines = err.split('\n')
      const packages = lines.filter((l) => l.startsWith('@@loaded ')).map((l) => l.slice(9))
      resolve({
        code: code ?? -1,
        packages: packages.sort(),
        stderr: lines.filter((l) => !l.startsWith('@@loaded ')).join('\n'),
      })
    })
  })
}
