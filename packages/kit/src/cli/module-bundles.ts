/**
 * Single-file builds of dependencies that ship as hundreds of small modules. Kysely's ESM build
 * is 263 files: resolving, reading and linking them costs a list command about 85 ms of CPU,
 * three times the whole runtime's own start-up, even with the compile cache. The same code as
 * one file costs a few milliseconds.
 *
 * `npm ci` builds the bundles (`scripts/bundle-modules.ts`, the root's postinstall) into
 * node_modules/.gatehouse/bundles/, each with a stamp naming the package version it was built
 * from. `useModuleBundles()` (called by every binary's entry before it loads its program)
 * redirects the bare specifier to the bundle only when the stamp matches the installed package,
 * so a stale or missing bundle silently falls back to the package itself. Tests and tools that
 * do not call it load the packages as published. `GATEHOUSE_NO_BUNDLES=1` turns it off.
 */
import { registerHooks } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { readFileSync } from '../startup-builtins.ts'

/** The packages bundled, by the specifier the code imports. */
export const BUNDLED_PACKAGES = ['kysely'] as const

/** Where `npm ci` puts the bundles of this checkout. */
export const DEFAULT_BUNDLE_DIR = fileURLToPath(
  new URL('../../../../node_modules/.gatehouse/bundles/', import.meta.url),
)

export interface BundleStamp {
  package: string
  version: string
  /** The package.json of the package the bundle was built from. */
  manifest: string
}

/** A package's version as its package.json at `manifest` says, or undefined. */
export function manifestVersion(manifest: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version
  } catch {
    return undefined
  }
}

/** The package.json of an installed package, found by resolving it (without loading it). */
export function installedManifest(specifier: string, from: string = import.meta.url): string | undefined {
  try {
    // Walk up from the resolved entry file to the package's own package.json.
    let url = new URL('.', import.meta.resolve(specifier, from))
    for (let i = 0; i < 6; i++) {
      try {
        const manifest = fileURLToPath(new URL('package.json', url))
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }
        if (pkg.name === specifier) return manifest
      } catch {
        // not this folder
      }
      url = new URL('..', url)
    }
  } catch {
    return undefined
  }
  return undefined
}

/** The file name of a package's bundle and of its stamp inside a bundle folder. */
export function bundleFiles(dir: string, specifier: string): { bundle: string; stamp: string } {
  const base = specifier.replace(/[^a-z0-9.-]/gi, '_')
  return { bundle: `${dir.replace(/\/?$/, '/')}${base}.mjs`, stamp: `${dir.replace(/\/?$/, '/')}${base}.json` }
}

/**
 * Redirect each bundled package to its bundle where the bundle matches the installed version.
 * Returns the packages redirected. Call it before the modules that import them are loaded.
 */
export function useModuleBundles(dir: string = DEFAULT_BUNDLE_DIR, env: NodeJS.ProcessEnv = process.env): string[] {
  if (env.GATEHOUSE_NO_BUNDLES) return []
  const redirects = new Map<string, string>()
  for (const specifier of BUNDLED_PACKAGES) {
    const files = bundleFiles(dir, specifier)
    let stamp: BundleStamp
    try {
      stamp = JSON.parse(readFileSync(files.stamp, 'utf8')) as BundleStamp
    } catch {
      continue
    }
    // The stamp's own manifest, read as a file: resolving the package here would be a module
    // resolution on every start (and what a test of loaded packages counts as loading it).
    if (stamp.package !== specifier || manifestVersion(stamp.manifest) !== stamp.version) continue
    redirects.set(specifier, pathToFileURL(files.bundle).href)
  }
  if (redirects.size === 0) return []
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const url = redirects.get(specifier)
      return url === undefined ? nextResolve(specifier, context) : { url, format: 'module', shortCircuit: true }
    },
  })
  return [...redirects.keys()]
}
