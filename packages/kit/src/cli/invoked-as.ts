/**
 * The commands a program suggests (`run edgegate node list`, its `--help` examples) spelled the
 * way the user ran it, so they work when pasted: in a checkout only `bin/edgegate` runs (the
 * system Node may be older and nothing is on PATH); once installed on PATH it is `edgegate`.
 *
 * The launchers in `bin/` set `GATEHOUSE_INVOKED_AS` to the path the shell ran them by, or to the
 * bare name when PATH finds that same file. Without it (tests, `node apps/…/main.ts`, a service
 * unit) commands are printed as written.
 */

/** Characters a shell word may hold unquoted; anything else is quoted when the path is printed. */
const PLAIN_WORD = /^[\w@%+=:,./-]+$/

/**
 * How to type `name` in this shell: `GATEHOUSE_INVOKED_AS` when it names this program (its last
 * path segment is `name`: a variable inherited from another program's launcher is ignored), else
 * `name`. A path with spaces or other shell characters comes back quoted.
 *
 * @example invokedAs('edgegate') // 'bin/edgegate' after `bin/edgegate node list`
 */
export function invokedAs(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const typed = env.GATEHOUSE_INVOKED_AS
  if (!typed || typed === name || typed.slice(typed.lastIndexOf('/') + 1) !== name) return name
  return PLAIN_WORD.test(typed) ? typed : `'${typed.replaceAll("'", `'\\''`)}'`
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * `text` with each mention of the command `name` (the name as a whole word, followed by a
 * subcommand or a flag) spelled as `invokedAs(name)`. With `subcommands`, only those words
 * count as a command after the name, so prose such as "the edgegate control plane" is left
 * alone; without, any lowercase word does (for a hint an app prints on purpose).
 *
 * @example typedCommands('no nodes yet: edgegate node add --kind sshgate ID', 'edgegate')
 * // 'no nodes yet: bin/edgegate node add --kind sshgate ID' after `bin/edgegate status`
 */
export function typedCommands(
  text: string,
  name: string,
  subcommands?: Iterable<string>,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const typed = invokedAs(name, env)
  if (typed === name) return text
  const words = subcommands ? [...subcommands].map(escapeRegExp).join('|') : '[a-z][a-z0-9-]*'
  // Not part of a longer word or path (`apps/edgegate`, `edgegate.json`), then
  // spaces and a subcommand, a flag, or a usage placeholder (`[options]`, `<command>`).
  const mention = new RegExp(`(?<![\\w./-])${escapeRegExp(name)}(?= +(?:(?:${words})\\b|--?[a-zA-Z]|\\[|<))`, 'g')
  return text.replace(mention, () => typed)
}
