/**
 * The contract between `npm start` (scripts/stack.ts) and each app: an app that takes part
 * in the local stack has `apps/<app>/stack.ts` exporting `startStack`. It starts the app
 * (normally as a child process on embedded defaults under `ctx.dataDir`), and returns what
 * to print and how to stop.
 */
export interface StackContext {
  /** Repository root. */
  root: string
  /** This app's state folder, `./.gatehouse/<app>/` (created before the call). */
  dataDir: string
  /** Path of the Node 24 binary running the stack (use it for child processes). */
  node: string
  /** Print a line prefixed with the app name. */
  log(line: string): void
  /** Services other apps started before this one, by app name (e.g. edgegate for sshproxy). */
  started: Record<string, StackService>
  /**
   * The stack's fixed port for `base` (e.g. 8443): `base` itself unless GATEHOUSE_PORT_OFFSET
   * shifts every port, which lets a test run a second stack beside one already running.
   */
  port(base: number): number
}

export interface StackService {
  /** What a person opens or points a client at, e.g. `{ api: 'http://127.0.0.1:8053' }`. */
  urls: Record<string, string>
  /** Generated credentials to print (first run only is fine; say where they are kept). */
  credentials?: Record<string, string>
  /** Extra lines to print (how to try it). */
  notes?: string[]
  stop(): Promise<void>
}

export type StartStack = (ctx: StackContext) => Promise<StackService>
