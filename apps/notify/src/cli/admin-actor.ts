/**
 * What the admin commands share: the identity their changes are recorded under in the audit
 * log, and reading a secret from a file (never from the command line, where `ps` shows it).
 */
import { CliError } from '@gatehouse/kit/cli/program.ts'
// Not `import … from 'node:fs'`: `notify token list` loads this module, and an ES import of a
// builtin loads its stream classes at start-up (kit startup-builtins.ts).
import { readFileSync } from '@gatehouse/kit/startup-builtins.ts'
import type { Reader } from '../auth/guard.ts'

/**
 * The audit log's actor of a command-line change: `cli:<login>` (the operating-system user
 * who ran it). Its id matches no reader, so a command never counts as "yourself".
 */
export function cliActor(): Reader {
  let login = 'unknown'
  try {
    login = process.getBuiltinModule('node:os').userInfo().username
  } catch {
    // no passwd entry for this uid (a container): keep "unknown"
  }
  return { id: 'cli', username: `cli:${login}`, isAdmin: true }
}

/** The first line of a file (`-`: standard input), without its line ending. */
export function readSecretFile(path: string, what: string): string {
  let text: string
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8')
  } catch (err) {
    throw new CliError(`cannot read the ${what} from ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`)
  }
  const value = text.split(/\r?\n/, 1)[0] ?? ''
  if (value === '') throw new CliError(`${path} holds no ${what} (its first line is empty)`)
  return value
}
