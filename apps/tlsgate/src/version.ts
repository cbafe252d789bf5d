import { packageVersion } from '@gatehouse/kit/package-version.ts'

/** The version reported by `--version` and `tlsgate_build_info` (from package.json). */
export const VERSION = packageVersion(import.meta.dirname)
