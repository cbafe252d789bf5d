import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import { startS3 } from '../src/index.ts'

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

test('startS3 serves a created bucket and stops', async () => {
  const s3 = await startS3()
  try {
    assert.match(s3.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/)
    await s3.createBucket('testkit-bucket')
    // The real server answers in S3's XML: the created bucket exists, another does not.
    const res = await fetch(`${s3.endpoint}/testkit-bucket/missing-key`)
    assert.equal(res.status, 404)
    assert.match(await res.text(), /<Code>NoSuchKey<\/Code>/)
    const other = await fetch(`${s3.endpoint}/other-bucket/missing-key`)
    assert.match(await other.text(), /<Code>NoSuchBucket<\/Code>/)
    await assert.rejects(s3.createBucket('Bad_Name'), TypeError)
  } finally {
    await s3.stop()
  }
  assert.equal(await refused(s3.port), true)
})
