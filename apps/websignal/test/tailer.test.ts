import assert from 'node:assert/strict'
import { appendFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { OffsetFile } from '../src/tail/offsets.ts'
import { type LostFile, Tailer, type TailPosition } from '../src/tail/tailer.ts'

const dir = tempDir('websignal-tail-')
after(() => dir.remove())
let n = 0

function harness(start?: TailPosition, maxLineBytes = 16 * 1024, clock?: { ms: number }) {
  const path = join(dir.path, `log${++n}`)
  const got: string[] = []
  const restarts: string[] = []
  let tooLong = 0
  let position: TailPosition | undefined
  const tailer = new Tailer(
    {
      path,
      maxLineBytes,
      chunkBytes: 64,
      ...(start ? { start } : {}),
      ...(clock ? { rotatedGraceMs: 5000, now: () => clock.ms } : {}),
    },
    {
      lines: (lines, pos) => {
        got.push(...lines)
        position = pos
      },
      tooLong: () => tooLong++,
      restart: (r) => restarts.push(r),
    },
  )
  after(() => tailer.close())
  return {
    path,
    tailer,
    got,
    restarts,
    get tooLong() {
      return tooLong
    },
    get position() {
      return position
    },
  }
}

test('first start reads from the end; later lines arrive, partial lines wait', async () => {
  const h = harness()
  writeFileSync(h.path, 'old line\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, [])
  appendFileSync(h.path, 'one\ntw')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['one'])
  appendFileSync(h.path, 'o\r\nthree\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['one', 'two', 'three'])
  assert.equal(h.position?.offset, 'old line\none\ntwo\r\nthree\n'.length)
})

test('rename rotation loses nothing: old file drained, new one read from 0', async () => {
  const h = harness()
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, 'a\n')
  await h.tailer.poll()
  appendFileSync(h.path, 'b\n') // written before rotation, not yet read
  renameSync(h.path, `${h.path}.1`)
  writeFileSync(h.path, 'c\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'b', 'c'])
  assert.deepEqual(h.restarts, ['rotated'])
})

test('rename rotation: lines the server still writes to the old file are read until it goes quiet', async () => {
  // nginx writes to the renamed file until it gets USR1 and reopens its log.
  const clock = { ms: 0 }
  const h = harness(undefined, 16 * 1024, clock)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, 'a\n')
  await h.tailer.poll()
  renameSync(h.path, `${h.path}.1`)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  assert.deepEqual(h.restarts, ['rotated'])
  assert.equal(h.tailer.draining, 1)
  appendFileSync(`${h.path}.1`, 'late 1\nlate ')
  clock.ms += 1000
  await h.tailer.poll()
  appendFileSync(`${h.path}.1`, '2\n')
  appendFileSync(h.path, 'new 1\n')
  clock.ms += 4000
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'late 1', 'late 2', 'new 1'])
  // Old-file lines carry the current file's position, and the old file's under its new name:
  // a restart resumes in both.
  const ino = h.position!.ino
  appendFileSync(`${h.path}.1`, 'late 3\n')
  clock.ms += 4999
  await h.tailer.poll()
  assert.equal(h.got.at(-1), 'late 3')
  assert.deepEqual(
    [h.position!.ino, h.position!.offset, h.position!.draining?.map((d) => [d.path, d.offset])],
    [ino, 'new 1\n'.length, [[`${h.path}.1`, 'a\nlate 1\nlate 2\nlate 3\n'.length]]],
  )
  // Quiet for the grace period: the old file is closed, and later writes to it are not read.
  clock.ms += 5000
  await h.tailer.poll()
  assert.equal(h.tailer.draining, 0)
  assert.equal(h.position!.draining, undefined, 'the closed file leaves the position')
  appendFileSync(`${h.path}.1`, 'too late\n')
  appendFileSync(h.path, 'new 2\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'late 1', 'late 2', 'new 1', 'late 3', 'new 2'])
})

test('a deleted file still being written is read while the path is waited for', async () => {
  const clock = { ms: 0 }
  const h = harness(undefined, 16 * 1024, clock)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  const { openSync, writeSync, closeSync } = await import('node:fs')
  const writer = openSync(h.path, 'a')
  writeSync(writer, 'a\n')
  rmSync(h.path)
  await h.tailer.poll()
  assert.equal(h.tailer.state, 'waiting')
  writeSync(writer, 'b\n')
  clock.ms += 1000
  await h.tailer.poll()
  closeSync(writer)
  assert.deepEqual(h.got, ['a', 'b'])
  writeFileSync(h.path, 'c\n')
  clock.ms += 6000
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'b', 'c'])
  assert.equal(h.tailer.draining, 0)
  assert.deepEqual(h.restarts, ['reappeared'])
})

test("a restart while a line is half-written resumes at that line's start", async () => {
  const h = harness()
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, 'one\nhalf')
  await h.tailer.poll()
  appendFileSync(h.path, ' more')
  await h.tailer.poll()
  assert.equal(h.position?.offset, 'one\n'.length)
  await h.tailer.close()
  appendFileSync(h.path, ' done\n')
  const got: string[] = []
  const again = new Tailer(
    { path: h.path, start: h.position!, maxLineBytes: 1024 },
    { lines: (l) => got.push(...l), tooLong: () => {}, restart: () => {} },
  )
  await again.poll()
  await again.close()
  assert.deepEqual(got, ['half more done'])
})

test('copytruncate and truncation: read again from 0 and count it', async () => {
  const h = harness()
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, 'a\nb\n')
  await h.tailer.poll()
  truncateSync(h.path, 0)
  appendFileSync(h.path, 'c\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'b', 'c'])
  assert.deepEqual(h.restarts, ['truncated'])
})

test('copytruncate refilled past the offset between two polls: noticed by the first bytes, read from 0', async () => {
  const h = harness()
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, '2026-11-25T08:00:00 old line one\n2026-11-25T08:00:01 old line two\n')
  await h.tailer.poll()
  const newer = Array.from({ length: 6 }, (_, i) => `2026-11-25T09:00:0${i} new line ${i}`)
  truncateSync(h.path, 0)
  appendFileSync(h.path, `${newer.join('\n')}\n`)
  await h.tailer.poll()
  assert.deepEqual(h.got, ['2026-11-25T08:00:00 old line one', '2026-11-25T08:00:01 old line two', ...newer])
  assert.deepEqual(h.restarts, ['truncated'])
  // Growth alone is not a truncation.
  appendFileSync(h.path, 'more\n')
  await h.tailer.poll()
  assert.equal(h.got.at(-1), 'more')
  assert.deepEqual(h.restarts, ['truncated'])
})

test('a file that does not exist yet, then deletion and reappearance', async () => {
  const h = harness()
  await h.tailer.poll()
  assert.equal(h.tailer.state, 'waiting')
  assert.equal(h.tailer.started, true)
  writeFileSync(h.path, 'x\n')
  await h.tailer.poll()
  // Created after the first poll: read whole, nothing written to it is missed.
  assert.deepEqual(h.got, ['x'])
  appendFileSync(h.path, 'y\n')
  rmSync(h.path)
  await h.tailer.poll()
  assert.deepEqual(h.got, ['x', 'y'])
  assert.equal(h.tailer.state, 'waiting')
  writeFileSync(h.path, 'z\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['x', 'y', 'z'])
  assert.deepEqual(h.restarts, ['reappeared', 'reappeared'])
})

test('restart resumes from the saved offset; a file rotated while down: its rest (found as .1) and the new one whole', async () => {
  const first = harness()
  writeFileSync(first.path, '')
  await first.tailer.poll()
  appendFileSync(first.path, 'a\nb\n')
  await first.tailer.poll()
  await first.tailer.close()
  const state = new OffsetFile(join(dir.path, 'state'))
  state.save({ [first.path]: first.position! })
  appendFileSync(first.path, 'c\n')
  const saved = new OffsetFile(join(dir.path, 'state')).load()[first.path]!
  let position: TailPosition | undefined
  const lost: LostFile[] = []
  const events = {
    lines: (l: string[], p: TailPosition) => {
      first.got.push(...l)
      position = p
    },
    tooLong: () => {},
    restart: (r: string) => first.restarts.push(r),
    lost: (f: LostFile) => lost.push(f),
  }
  const again = new Tailer({ path: first.path, start: saved, maxLineBytes: 1024 }, events)
  await again.poll()
  assert.deepEqual(first.got, ['a', 'b', 'c'])
  await again.close()
  // Written, then rotated away while no agent ran.
  appendFileSync(first.path, 'c2\n')
  renameSync(first.path, `${first.path}.1`)
  writeFileSync(first.path, 'd\n')
  const third = new Tailer({ path: first.path, start: position!, maxLineBytes: 1024 }, events)
  await third.poll()
  await third.close()
  assert.deepEqual(first.got, ['a', 'b', 'c', 'c2', 'd'])
  assert.deepEqual(first.restarts, ['rotated'])
  // Rotated away and removed while down (compressed, say): the new file whole, and the loss said.
  // (The new file is made before the old ones go, so it cannot get one of their inodes.)
  const fourthStart = position!
  assert.equal(fourthStart.draining?.[0]?.path, `${first.path}.1`, 'the file still drained, by its new name')
  appendFileSync(first.path, 'e\n')
  writeFileSync(`${first.path}.new`, 'f\n')
  rmSync(`${first.path}.1`)
  rmSync(first.path)
  renameSync(`${first.path}.new`, first.path)
  const fourth = new Tailer({ path: first.path, start: fourthStart, maxLineBytes: 1024 }, events)
  await fourth.poll()
  await fourth.close()
  assert.deepEqual(first.got, ['a', 'b', 'c', 'c2', 'd', 'f'])
  assert.deepEqual(lost, [
    { path: `${first.path}.1`, offset: 'a\nb\nc\nc2\n'.length, reason: 'gone' },
    { path: undefined, offset: 'd\n'.length, reason: 'gone' },
  ])
})

test('a restart finds a rotated file by its inode only if its first bytes are those it read', async () => {
  const clock = { ms: 0 }
  const h = harness(undefined, 16 * 1024, clock)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, 'a\n')
  await h.tailer.poll()
  renameSync(h.path, `${h.path}.1`)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  await h.tailer.close()
  const stored = h.position!
  assert.equal(stored.draining?.length, 1)
  appendFileSync(`${h.path}.1`, 'late\n')
  // As if the file had been removed and its inode given to another one beside it.
  const other = { ...stored, draining: [{ ...stored.draining![0]!, head: '0000000000000000' }] }
  const lost: LostFile[] = []
  const got: string[] = []
  const events = { lines: (l: string[]) => got.push(...l), tooLong: () => {}, restart: () => {} }
  const again = new Tailer({ path: h.path, start: other, maxLineBytes: 1024 }, { ...events, lost: (f) => lost.push(f) })
  await again.poll()
  await again.close()
  assert.deepEqual(got, [])
  assert.deepEqual(lost, [{ path: `${h.path}.1`, offset: 2, reason: 'replaced' }])
  // With the true fingerprint it is read on.
  const right = new Tailer({ path: h.path, start: stored, maxLineBytes: 1024 }, events)
  await right.poll()
  await right.close()
  assert.deepEqual(got, ['late'])
})

test('a rotated file renamed back to the path while the agent was down is read on where it stood, each line once', async () => {
  const clock = { ms: 0 }
  const h = harness(undefined, 16 * 1024, clock)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, 'a\nb\n')
  await h.tailer.poll()
  renameSync(h.path, `${h.path}.1`)
  writeFileSync(h.path, 'c\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'b', 'c'])
  await h.tailer.close()
  // What offsets.json holds: the new file, and the rotated one still drained under its new name.
  const state = new OffsetFile(join(dir.path, `state-back-${n}`))
  state.save({ [h.path]: h.position! })
  const stored = new OffsetFile(join(dir.path, `state-back-${n}`)).load()[h.path]!
  assert.deepEqual(
    stored.draining?.map((d) => [d.path, d.offset, typeof d.head]),
    [[`${h.path}.1`, 'a\nb\n'.length, 'string']],
  )
  // While no agent runs, the rotation is undone: the new file is moved aside (and written to),
  // the old one renamed back to the log's path, where the server writes on.
  appendFileSync(h.path, 'c2\n')
  renameSync(h.path, `${h.path}.new`)
  renameSync(`${h.path}.1`, h.path)
  appendFileSync(h.path, 'd\n')
  const got: string[] = []
  const restarts: string[] = []
  const lost: LostFile[] = []
  let position: TailPosition | undefined
  const events = {
    lines: (l: string[], p: TailPosition) => {
      got.push(...l)
      position = p
    },
    tooLong: () => {},
    restart: (r: 'rotated' | 'truncated' | 'reappeared') => restarts.push(r),
    lost: (f: LostFile) => lost.push(f),
  }
  const again = new Tailer(
    { path: h.path, start: stored, maxLineBytes: 1024, rotatedGraceMs: 5000, now: () => clock.ms },
    events,
  )
  await again.poll()
  assert.deepEqual(got.toSorted(), ['c2', 'd'], 'a and b are not read again')
  assert.deepEqual(lost, [])
  // The file at the path is the current one again, at its end; the moved-aside one is drained.
  const size = 'a\nb\nd\n'.length
  assert.deepEqual(
    [position?.offset, position?.draining?.map((d) => [d.path, d.offset])],
    [size, [[`${h.path}.new`, 'c\nc2\n'.length]]],
  )
  appendFileSync(h.path, 'e\n')
  clock.ms += 6000
  await again.poll()
  await again.close()
  assert.deepEqual(got.toSorted(), ['c2', 'd', 'e'])
  assert.equal(position?.draining, undefined, 'the moved-aside file went quiet and was closed')
  // Another restart from there reads nothing twice either.
  const third = new Tailer({ path: h.path, start: position!, maxLineBytes: 1024 }, events)
  await third.poll()
  await third.close()
  assert.deepEqual(got.toSorted(), ['c2', 'd', 'e'])
  // Renamed back over the new file, which is then gone: its loss is said, the old one read on.
  const fourthStart = position!
  renameSync(h.path, `${h.path}.1`)
  writeFileSync(h.path, 'f\n')
  const fourth = new Tailer({ path: h.path, start: fourthStart, maxLineBytes: 1024 }, events)
  await fourth.poll()
  await fourth.close()
  assert.deepEqual(got.toSorted(), ['c2', 'd', 'e', 'f'])
  const fifthStart = position!
  appendFileSync(`${h.path}.1`, 'g\n')
  renameSync(`${h.path}.1`, h.path)
  const fifth = new Tailer({ path: h.path, start: fifthStart, maxLineBytes: 1024 }, events)
  await fifth.poll()
  await fifth.close()
  assert.deepEqual(got.toSorted(), ['c2', 'd', 'e', 'f', 'g'])
  assert.deepEqual(lost, [{ path: undefined, offset: 'f\n'.length, reason: 'gone' }])
})

test('a rotated file renamed back to the path while it is read is read on where it stood', async () => {
  const clock = { ms: 0 }
  const h = harness(undefined, 16 * 1024, clock)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, 'a\n')
  await h.tailer.poll()
  // Rotated, then the rotation undone over the new file.
  renameSync(h.path, `${h.path}.1`)
  writeFileSync(h.path, 'b\n')
  await h.tailer.poll()
  renameSync(`${h.path}.1`, h.path)
  appendFileSync(h.path, 'c\n')
  clock.ms += 1000
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'b', 'c'])
  assert.equal(h.tailer.draining, 1, 'the replaced new file, open, drained until it goes quiet')
  // Moved away (the path missing for a poll) and back.
  renameSync(h.path, `${h.path}.tmp`)
  await h.tailer.poll()
  assert.equal(h.tailer.state, 'waiting')
  renameSync(`${h.path}.tmp`, h.path)
  appendFileSync(h.path, 'd\n')
  await h.tailer.poll()
  assert.deepEqual(h.got, ['a', 'b', 'c', 'd'])
  assert.deepEqual(h.restarts, ['rotated', 'rotated', 'reappeared'])
  assert.equal(h.position?.offset, 'a\nc\nd\n'.length)
})

test('a file truncated and written past the saved offset while the agent was down is read from its start', async () => {
  const first = harness()
  writeFileSync(first.path, '')
  await first.tailer.poll()
  appendFileSync(first.path, 'one\n')
  await first.tailer.poll()
  await first.tailer.close()
  // copytruncate while down, then more than the saved offset written.
  truncateSync(first.path, 0)
  appendFileSync(first.path, 'two\nthree\n')
  const restarts: string[] = []
  const got: string[] = []
  const again = new Tailer(
    { path: first.path, start: first.position!, maxLineBytes: 1024 },
    { lines: (l) => got.push(...l), tooLong: () => {}, restart: (r) => restarts.push(r) },
  )
  await again.poll()
  await again.close()
  assert.deepEqual(got, ['two', 'three'])
  assert.deepEqual(restarts, ['truncated'])
})

test('a line over the bound is dropped and counted; the next line is intact', async () => {
  const h = harness(undefined, 100)
  writeFileSync(h.path, '')
  await h.tailer.poll()
  appendFileSync(h.path, `${'x'.repeat(500)}\nok\n${'y'.repeat(150)}`)
  await h.tailer.poll()
  appendFileSync(h.path, `${'y'.repeat(150)}\nfine\n`)
  await h.tailer.poll()
  assert.deepEqual(h.got, ['ok', 'fine'])
  assert.equal(h.tooLong, 2)
})

test('an unreadable path keeps the input from starting', async () => {
  const h = harness()
  const { mkdirSync } = await import('node:fs')
  mkdirSync(h.path)
  await h.tailer.poll()
  assert.equal(h.tailer.started, false)
  assert.match(h.tailer.error ?? '', /not a regular file/)
})

test('property: any content appended in any pieces yields exactly its complete lines', async () => {
  const fc = (await import('fast-check')).default
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.string({ unit: fc.constantFrom('a', 'é', '\n', '\r', ' ', 'x'), maxLength: 60 }), { maxLength: 12 }),
      async (pieces) => {
        const h = harness(undefined, 40)
        writeFileSync(h.path, '')
        await h.tailer.poll()
        for (const p of pieces) {
          appendFileSync(h.path, p)
          await h.tailer.poll()
        }
        await h.tailer.close()
        const text = pieces.join('')
        // Complete lines as written (the bound counts a trailing CR), without the unfinished tail.
        const lines = text
          .slice(0, text.lastIndexOf('\n') + 1)
          .split('\n')
          .slice(0, -1)
        const fits = (l: string) => Buffer.byteLength(l) <= 40
        const expected = lines
          .filter(fits)
          .map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
          .filter((l) => l !== '')
        assert.deepEqual(h.got, expected)
        assert.ok(h.tooLong >= lines.filter((l) => !fits(l)).length)
      },
    ),
    { numRuns: 150 },
  )
})
