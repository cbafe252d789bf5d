/**
 * Every command a README shows exists: for each `bin/<app> <command> [<subcommand>]` in the root
 * README and the apps' READMEs, `bin/<app> <command> --help` answers through the launcher in a
 * clean shell whose `node` is the system one, and a subcommand the README names is one its help
 * lists. A renamed or removed command fails here instead of in a user's terminal.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'

const root = join(import.meta.dirname, '..')
const home = mkdtempSync(join(tmpdir(), 'gatehouse-readme-'))
after(() => rmSync(home, { recursive: true, force: true }))

const readmes = ['README.md', ...readdirSync(join(root, 'apps')).map((app) => join('apps', app, 'README.md'))].filter(
  (file) => {
    try {
      readFileSync(join(root, file))
      return true
    } catch {
      return false
    }
  },
)

/** `[app, command, subcommand?]` of every `bin/<app> ...` a README shows, with where it was. */
function documentedCommands(): Array<{ file: string; app: string; words: string[] }> {
  const found: Array<{ file: string; app: string; words: string[] }> = []
  for (const file of readmes) {
    for (const m of readFileSync(join(root, file), 'utf8').matchAll(
      /(?:^|[\s`$(])bin\/([a-z]+)((?: [a-z][a-z-]*){0,2})/gm,
    )) {
      const words = m[2]!.trim().split(' ').filter(Boolean)
      if (words.length > 0) found.push({ file, app: m[1]!, words })
    }
  }
  return found
}

function run(app: string, args: string[]) {
  return spawnSync(join(root, 'bin', app), args, {
    cwd: root,
    env: { PATH: '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', GATEHOUSE_HOME: home, NO_COLOR: '1' },
    encoding: 'utf8',
    timeout: 60_000,
  })
}

/** The command names a commander help text lists under "Commands:". */
function listedCommands(help: string): string[] {
  const section = help.split(/^Commands:$/m)[1] ?? ''
  return [...section.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!)
}

test('the READMEs show commands at all (the scan finds them)', () => {
  const apps = new Set(documentedCommands().map((c) => c.app))
  for (const app of ['edgegate', 'sshproxy', 'tlsgate', 'websignal', 'artsvc', 'dnsctl', 'notify']) {
    assert.ok(apps.has(app), `no bin/${app} command found in ${readmes.join(', ')}`)
  }
})

test('every documented command and subcommand exists', () => {
  const helps = new Map<string, string>()
  const help = (app: string, words: string[]) => {
    const key = [app, ...words].join(' ')
    let text = helps.get(key)
    if (text === undefined) {
      const r = run(app, [...words, '--help'])
      assert.equal(r.status, 0, `bin/${key} --help: ${r.stderr}`)
      text = r.stdout
      helps.set(key, text)
    }
    return text
  }
  const top = new Map<string, string[]>()
  for (const { file, app, words } of documentedCommands()) {
    const commands = top.get(app) ?? listedCommands(help(app, []))
    top.set(app, commands)
    const [command, sub] = words
    assert.ok(commands.includes(command!), `${file}: bin/${app} has no command '${command}'`)
    const subs = listedCommands(help(app, [command!]))
    if (sub !== undefined && subs.length > 0) {
      assert.ok(
        subs.includes(sub),
        `${file}: bin/${app} ${command} has no subcommand '${sub}' (has ${subs.join(', ')})`,
      )
    }
  }
})
