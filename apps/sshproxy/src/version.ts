import { packageVersion } from '@gatehouse/kit'

/** The version reported by `--version` and `sshproxy_build_info` (from package.json). */
export const VERSION = packageVersion(import.meta.dirname)
