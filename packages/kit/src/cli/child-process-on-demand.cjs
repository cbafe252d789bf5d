'use strict'
// Stands in for `node:child_process` in commander alone (see lazy-builtins.ts): the real
// module is loaded at its first use, which only a stand-alone executable subcommand makes.
module.exports = new Proxy(
  {},
  {
    get(_, name) {
      return process.getBuiltinModule('node:child_process')[name]
    },
  },
)
