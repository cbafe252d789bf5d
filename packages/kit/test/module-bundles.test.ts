import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { pathToFileURL } from 'node:url'
import { buildModuleBundles } from '../scripts/bundle-modules.ts'
import { bundleFiles, installedManifest, manifestVersion } from '../src/cli/module-bundles.ts'

const manifest = installedManifest('kysely')!
const installedVersion = () => manifestVersion(manifest)

const kitDir = join(import.meta.dirname, '..')
const dir = mkdtempSync(join(tmpdir(), 'kit-bundles-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/**
 * In a fresh process: turn the bundles in `bundleDir` on, then resolve kysely and run a real
 * query through the kit's database layer (which imports kysely). Prints what it saw as JSON.
 */
function probe(
  bundleDir: string,
  env: NodeJS.ProcessEnv = {},
): { redirected: string[]; resolved: string; rows: unknown } {
  const script = `
    import { useModuleBundles } from ${JSON.stringify(pathToFileURL(join(kitDir, 'src/cli/module-bundles.ts')).href)}
    const redirected = useModuleBundles(${JSON.stringify(bundleDir)})
    const resolved = import.meta.resolve('kysely')
    const { openDatabase, sql } = await import(${JSON.stringify(pathToFileURL(join(kitDir, 'src/db/database.ts')).href)})
    const d = await openDatabase({ url: 'sqlite::memory:' })
    const rows = (await sql\`select 40 + 2 as answer\`.execute(d.db)).rows
    await d.close()
    process.stdout.write(JSON.stringify({ redirected, resolved, rows }))
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: kitDir,
    env: { ...process.env, GATEHOUSE_NO_BUNDLES: '', ...env },
    encoding: 'utf8',
  })
  return JSON.parse(out)
}

describe('single-file dependency bundles', () => {
  before(async () => {
    assert.deepEqual(await buildModuleBundles(dir), [`kysely@${installedVersion()}`])
  })

  test('the build writes the bundle and a stamp naming the installed version', () => {
    const files = bundleFiles(dir, 'kysely')
    assert.deepEqual(JSON.parse(readFileSync(files.stamp, 'utf8')), {
      package: 'kysely',
      version: installedVersion(),
      manifest,
    })
    assert.match(readFileSync(files.bundle, 'utf8'), /class Kysely/)
  })

  test('a matching bundle is what kysely resolves to, and the database layer works on it', () => {
    const seen = probe(dir)
    assert.deepEqual(seen.redirected, ['kysely'])
    assert.equal(seen.resolved, pathToFileURL(bundleFiles(dir, 'kysely').bundle).href)
    assert.deepEqual(seen.rows, [{ answer: 42 }])
  })

  test('a stale stamp, a missing bundle folder or GATEHOUSE_NO_BUNDLES fall back to the package', () => {
    const stale = mkdtempSync(join(dir, 'stale-'))
    const files = bundleFiles(stale, 'kysely')
    writeFileSync(files.bundle, readFileSync(bundleFiles(dir, 'kysely').bundle))
    writeFileSync(files.stamp, JSON.stringify({ package: 'kysely', version: '0.0.1', manifest }))
    for (const seen of [probe(stale), probe(join(dir, 'missing')), probe(dir, { GATEHOUSE_NO_BUNDLES: '1' })]) {
      assert.deepEqual(seen.redirected, [])
      assert.match(seen.resolved, /\/node_modules\/kysely\//)
      assert.deepEqual(seen.rows, [{ answer: 42 }])
    }
  })
})
