/** Where CLI output goes (tests pass their own). */
export interface Io {
  out(s: string): void
  err(s: string): void
}

export const processIo: Io = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
}
