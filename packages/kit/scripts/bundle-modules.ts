/**
 * Builds the single-file bundles the binaries load instead of many-module packages (see
 * src/cli/module-bundles.ts for why). Run by the root's postinstall after `npm ci`; also
 * `node packages/kit/scripts/bundle-modules.ts [DIR]`. A failure only costs start-up time, so
 * it is reported in one line and never fails the install.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import {
  BUNDLED_PACKAGES,
  bundleFiles,
  DEFAULT_BUNDLE_DIR,
  installedManifest,
  manifestVersion,
} from '../src/cli/module-bundles.ts'

/** Bundle each package into `dir`; returns the packages built. */
export async function buildModuleBundles(dir: string = DEFAULT_BUNDLE_DIR): Promise<string[]> {
  const { rolldown } = await import('rolldown')
  mkdirSync(dir, { recursive: true })
  const built: string[] = []
  for (const specifier of BUNDLED_PACKAGES) {
    const manifest = installedManifest(specifier)
    const version = manifest && manifestVersion(manifest)
    if (!manifest || !version) continue
    const files = bundleFiles(dir, specifier)
    const build = await rolldown({ input: specifier, platform: 'node', external: [/^node:/], logLevel: 'silent' })
    try {
      // Written beside, then renamed: a binary starting meanwhile sees the old pair or the new.
      // Without documentation comments (Kysely's are 30 % of its code): each run of a binary
      // holds the module's source in memory, and this takes ~1 MiB off a list command's RSS.
      // Licence comments and the code itself (names, whitespace) are kept as published.
      await build.write({
        file: `${files.bundle}.tmp`,
        format: 'esm',
        codeSplitting: false,
        comments: { legal: true, annotation: false, jsdoc: false },
      })
    } finally {
      await build.close()
    }
    renameSync(`${files.bundle}.tmp`, files.bundle)
    writeFileSync(files.stamp, `${JSON.stringify({ package: specifier, version, manifest })}\n`)
    built.push(`${specifier}@${version}`)
  }
  return built
}

if (import.meta.main) {
  try {
    const built = await buildModuleBundles(process.argv[2])
    process.stderr.write(`bundled for faster CLI start-up: ${built.join(', ')}\n`)
  } catch (err) {
    process.stderr.write(`module bundles not built (the binaries start slower): ${(err as Error).message}\n`)
  }
}
