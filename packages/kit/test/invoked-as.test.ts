/**
 * The commands a program suggests are printed the way the user ran it: `bin/edgegate` in a
 * checkout, `edgegate` when installed on PATH (set by the launchers, see invoked-as.ts).
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { invokedAs, typedCommands } from '../src/cli/invoked-as.ts'
import { CliError, createCli, runCli } from '../src/cli/program.ts'

const packageJson = new URL('../package.json', import.meta.url)

describe('invokedAs', () => {
  test('the launcher’s path when it names this program; the bare name otherwise', () => {
    assert.equal(invokedAs('edgegate', { GATEHOUSE_INVOKED_AS: 'bin/edgegate' }), 'bin/edgegate')
    assert.equal(invokedAs('edgegate', { GATEHOUSE_INVOKED_AS: './bin/edgegate' }), './bin/edgegate')
    assert.equal(invokedAs('edgegate', {}), 'edgegate')
    assert.equal(invokedAs('edgegate', { GATEHOUSE_INVOKED_AS: 'edgegate' }), 'edgegate')
    // Inherited from another program's launcher: not this program's name.
    assert.equal(invokedAs('notify', { GATEHOUSE_INVOKED_AS: 'bin/edgegate' }), 'notify')
    assert.equal(invokedAs('gate', { GATEHOUSE_INVOKED_AS: 'bin/edgegate' }), 'gate')
  })

  test('a path a shell would split or expand is quoted, so it still works when pasted', () => {
    assert.equal(invokedAs('notify', { GATEHOUSE_INVOKED_AS: '/home/a b/bin/notify' }), `'/home/a b/bin/notify'`)
    assert.equal(invokedAs('notify', { GATEHOUSE_INVOKED_AS: "/o'brien/$x/notify" }), `'/o'\\''brien/$x/notify'`)
  })
})

describe('typedCommands', () => {
  const env = { GATEHOUSE_INVOKED_AS: 'bin/edgegate' }

  test('rewrites each command mention, leaving paths, files, possessives and prose alone', () => {
    assert.equal(
      typedCommands(
        'no node x (edgegate node list shows them); run `edgegate migrate` or "edgegate --help"; see apps/edgegate/README.md, edgegate.json, edgegate\'s alerts',
        'edgegate',
        ['node', 'migrate'],
        env,
      ),
      'no node x (bin/edgegate node list shows them); run `bin/edgegate migrate` or "bin/edgegate --help"; see apps/edgegate/README.md, edgegate.json, edgegate\'s alerts',
    )
    assert.equal(typedCommands('the edgegate control plane', 'edgegate', ['node'], env), 'the edgegate control plane')
    assert.equal(
      typedCommands('the edgegate control plane', 'edgegate', undefined, env),
      'the bin/edgegate control plane',
    )
    assert.equal(
      typedCommands('Usage: edgegate [options] [command]', 'edgegate', [], env),
      'Usage: bin/edgegate [options] [command]',
    )
  })

  test('idempotent, and a no-op without the launcher', () => {
    const once = typedCommands('run edgegate node list', 'edgegate', ['node'], env)
    assert.equal(typedCommands(once, 'edgegate', ['node'], env), once)
    assert.equal(typedCommands('run edgegate node list', 'edgegate', ['node'], {}), 'run edgegate node list')
  })
})

describe('a program made by createCli', () => {
  test('its help and its errors name it as typed; the prefix of an error line stays the bare name', async (t) => {
    const saved = process.env.GATEHOUSE_INVOKED_AS
    process.env.GATEHOUSE_INVOKED_AS = './bin/demo'
    t.after(() => {
      if (saved === undefined) delete process.env.GATEHOUSE_INVOKED_AS
      else process.env.GATEHOUSE_INVOKED_AS = saved
    })
    let out = ''
    let err = ''
    const program = createCli({
      name: 'demo',
      description: 'demo',
      packageJson,
      out: (text) => {
        out += text
      },
      err: (text) => {
        err += text
      },
    })
    program.command('show <id>').action((id: string) => {
      throw new CliError(`no thing ${id} (demo list shows them all)`)
    })
    program.command('list').action(() => {})
    assert.equal(await runCli(program, ['--help']), 0)
    assert.match(out, /^Usage: \.\/bin\/demo \[options\] \[command\]$/m)
    assert.equal(await runCli(program, ['show', 'x']), 1)
    assert.equal(err, 'demo: no thing x (./bin/demo list shows them all)\n')
  })
})
