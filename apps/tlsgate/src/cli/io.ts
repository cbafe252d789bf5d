/** Where command output goes: the process streams, or a test's buffers (in-process CLI tests). */
export interface Io {
  out(text: string): void
  err(text: string): void
}

export const processIo: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
}
