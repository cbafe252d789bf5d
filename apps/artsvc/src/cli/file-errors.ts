/**
 * A file system error in the words a person reads (`no such file or directory`), without
 * Node's code prefix and syscall suffix (`ENOENT: …, open '/x'`), for the CLI's one-line
 * errors that name the file themselves.
 */
export function fileErrorWords(err: unknown, withPath = false): string {
  const e = err as NodeJS.ErrnoException
  if (!e?.code) return String(e?.message ?? err)
  const words = e.message.replace(/^[A-Z]+: /, '').replace(/, \w+ '.*'$/, '')
  return withPath && e.path ? `${e.path}: ${words}` : words
}
