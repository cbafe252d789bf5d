/**
 * Owner-only state on disk. Databases, keys, credential files and storage folders hold
 * private notifications, artifacts, DNS history and secrets; created with the process
 * umask (usually 022) any local user could read them. What the kit and the apps create
 * is 0600 (files) and 0700 (folders) instead, whatever the umask. Existing files and
 * folders keep their mode: tightening them is the operator's call (docs/security.md).
 */
import { fs, mkdirSync } from './startup-builtins.ts'

/** Mode of files the apps create: read and write for the owner only. */
export const PRIVATE_FILE_MODE = 0o600
/** Mode of folders the apps create: the owner only. */
export const PRIVATE_DIR_MODE = 0o700

/**
 * Create `path` and any missing parents as owner-only folders (0700); existing ones are left as they are.
 *
 * @example await mkdirPrivate(join(storageDir, 'objects', 'ab'))
 */
export async function mkdirPrivate(path: string): Promise<void> {
  await fs.promises.mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE })
}

/** `mkdirPrivate` for startup code that is synchronous. */
export function mkdirPrivateSync(path: string): void {
  mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE })
}
