/** Public identifiers are safe to paste as command-line arguments. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ID_PATTERN, newId } from '../src/ids.ts'

test('new identifiers match the pattern and never begin with "-" (which a shell command would read as an option)', () => {
  const pattern = new RegExp(ID_PATTERN)
  const seen = new Set<string>()
  // With 64 first characters, 20,000 draws would include a leading '-' with near certainty.
  for (let i = 0; i < 20_000; i++) {
    const id = newId()
    assert.match(id, pattern)
    assert.notEqual(id[0], '-', id)
    seen.add(id)
  }
  assert.equal(seen.size, 20_000)
})
