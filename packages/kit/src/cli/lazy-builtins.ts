/**
 * commander requires `node:child_process` when it loads, for the stand-alone executable
 * subcommands it can spawn; Gatehouse's commands never use them, but loading the module (and
 * `net` and the stream stack behind it) was about 10 ms of every command's start-up, a fifth of
 * `--help` (#22). This resolve hook gives commander, and nothing else, a stand-in that loads
 * the real module on first use (`child-process-on-demand.cjs`). `test/binaries.test.ts` checks
 * that `--help` loads neither it nor the other costly builtins.
 */
import { registerHooks } from 'node:module'

const COMMANDER = /\/node_modules\/commander\/lib\/command\.js$/
const STAND_IN = new URL('./child-process-on-demand.cjs', import.meta.url).href

export function deferCommanderChildProcess(): void {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (
        (specifier === 'node:child_process' || specifier === 'child_process') &&
        context.parentURL !== undefined &&
        COMMANDER.test(context.parentURL)
      ) {
        return { url: STAND_IN, format: 'commonjs', shortCircuit: true }
      }
      return nextResolve(specifier, context)
    },
  })
}
