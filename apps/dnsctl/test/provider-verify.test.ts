/**
 * The provider change's check at the zone's assigned nameservers (verifyAtNameservers), against
 * a real knotd, a port nothing listens on, a knotd that was stopped, and a UDP server that
 * answers from another source address. The queries use a connected UDP socket: a refusal is
 * reported at once, in words, and ends the check (a stopped nameserver does not catch up by
 * waiting); an answer from an address the query was not sent to is not taken.
 *
 * The deadlines of the refused cases are an hour: a check that waited for them (the unconnected
 * socket's timeouts, or the loop retrying a refused nameserver) outlasts the test's timeout.
 */
import assert from 'node:assert/strict'
import { createSocket, type Socket } from 'node:dgram'
import { once } from 'node:events'
import { after, before, describe, test } from 'node:test'
import { freePort, type Knot, startKnot } from '@gatehouse/testkit'
import dnsPacket from 'dns-packet'
import { type ExpectedRRset, verifyAtNameservers } from '../src/provider/verify.ts'

const ZONE = 'verify.test'
const HOUR = 3_600_000

function zoneText(serial: number, www: string): string {
  return [
    '$TTL 300',
    `@ IN SOA ns1.${ZONE}. hostmaster.${ZONE}. ${serial} 3600 600 86400 300`,
    `@ IN NS ns1.${ZONE}.`,
    'ns1 IN A 192.0.2.53',
    `www IN A ${www}`,
    '@ IN TXT "v=spf1 -all"',
    '',
  ].join('\n')
}

const www = (...values: string[]): ExpectedRRset => ({ name: 'www', type: 'A', values, proxied: false })
const refusedAt = (port: number) =>
  new RegExp(`127\\.0\\.0\\.1:${port} refused the query: nothing listens there \\(the server is not running\\)`)

/**
 * A UDP "nameserver" that answers every A query with `address`, from its own socket or (`spoof`)
 * from a second socket on another port, as an off-path forger would.
 */
async function udpAnswerer(address: string, spoof: boolean) {
  const listener = createSocket('udp4')
  const forger = createSocket('udp4')
  listener.bind(0, '127.0.0.1')
  forger.bind(0, '127.0.0.1')
  await Promise.all([once(listener, 'listening'), once(forger, 'listening')])
  let sent = 0
  listener.on('message', (msg, from) => {
    const q = dnsPacket.decode(msg)
    const reply = dnsPacket.encode({
      type: 'response',
      id: q.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER,
      questions: q.questions,
      answers: (q.questions ?? []).map((question) => ({
        type: 'A',
        name: question.name,
        class: 'IN',
        ttl: 300,
        data: address,
      })),
    })
    const socket: Socket = spoof ? forger : listener
    socket.send(reply, from.port, from.address, () => {
      sent++
    })
  })
  return {
    port: listener.address().port,
    sent: () => sent,
    close: () => {
      listener.close()
      forger.close()
    },
  }
}

describe('verification at the assigned nameservers', () => {
  let knot: Knot

  before(async () => {
    knot = await startKnot({ zones: { [ZONE]: zoneText(1, '192.0.2.10') } })
  })

  after(async () => {
    await knot?.stop()
  })

  test('a real knotd serving the change verifies it; one serving other data is lag, reported with what it answers', async () => {
    const ok = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.10')], {
      port: knot.port,
      timeoutMs: 2000,
    })
    assert.deepEqual(ok, { verified: true, mismatches: [], refused: false })

    const lag = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.99')], {
      port: knot.port,
      timeoutMs: 300,
    })
    assert.deepEqual(lag, {
      verified: false,
      mismatches: [`127.0.0.1 answers www.${ZONE} A with 192.0.2.10`],
      refused: false,
    })
  })

  test('a port nothing listens on refuses at once, says so, and ends the check', async () => {
    const port = await freePort()
    const res = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.10')], { port, timeoutMs: HOUR })
    assert.equal(res.verified, false)
    assert.equal(res.refused, true)
    assert.equal(res.mismatches.length, 1)
    assert.match(res.mismatches[0]!, new RegExp(`^127\\.0\\.0\\.1 did not answer www\\.${ZONE} A: `))
    assert.match(res.mismatches[0]!, refusedAt(port))
  })

  test('a nameserver that answers old data is waited for (only refusals end the check early); gone, it refuses', async () => {
    const stopped = await startKnot({ zones: { [ZONE]: zoneText(1, '192.0.2.10') } })
    const port = stopped.port
    await stopped.stop()
    // Both nameservers have the same address here, so the two are told apart by port: the
    // answering one is a UDP server that serves the old data first, then the new.
    let current = '192.0.2.10'
    const server = createSocket('udp4')
    server.bind(port, '127.0.0.1')
    await once(server, 'listening')
    server.on('message', (msg, from) => {
      const q = dnsPacket.decode(msg)
      const reply = dnsPacket.encode({
        type: 'response',
        id: q.id,
        flags: dnsPacket.AUTHORITATIVE_ANSWER,
        questions: q.questions,
        answers: [{ type: 'A', name: `www.${ZONE}`, class: 'IN', ttl: 300, data: current }],
      })
      server.send(reply, from.port, from.address)
      // The first answer is the old data: the check has to come back for the new one.
      current = '192.0.2.20'
    })
    try {
      const res = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.20')], { port, timeoutMs: HOUR })
      assert.deepEqual(res, { verified: true, mismatches: [], refused: false })
    } finally {
      server.close()
    }
    // The same port once the server is gone: refused, at once.
    const gone = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.20')], { port, timeoutMs: HOUR })
    assert.equal(gone.refused, true)
    assert.match(gone.mismatches[0]!, refusedAt(port))
  })

  test('a knotd that was stopped refuses at once; lag on another nameserver is not called refused', async () => {
    const stopped = await startKnot({ zones: { [ZONE]: zoneText(1, '192.0.2.10') } })
    const port = stopped.port
    await stopped.stop()
    const res = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.10'), www('192.0.2.11')], {
      port,
      timeoutMs: HOUR,
    })
    assert.equal(res.verified, false)
    assert.equal(res.refused, true)
    assert.equal(res.mismatches.length, 2)
    for (const m of res.mismatches) assert.match(m, refusedAt(port))

    // 127.0.0.2 is loopback too, where the running knotd (bound to 127.0.0.1) does not listen:
    // with one nameserver lagging the result is lag, not "not running".
    const mixed = await verifyAtNameservers(ZONE, ['127.0.0.1', '127.0.0.2'], [www('192.0.2.99')], {
      port: knot.port,
      timeoutMs: 300,
    })
    assert.equal(mixed.verified, false)
    assert.equal(mixed.refused, false)
    assert.deepEqual(mixed.mismatches.length, 2)
    assert.equal(mixed.mismatches[0], `127.0.0.1 answers www.${ZONE} A with 192.0.2.10`)
    assert.match(
      mixed.mismatches[1]!,
      /^127\.0\.0\.2 did not answer www\.verify\.test A: 127\.0\.0\.2:\d+ refused the query/,
    )
  })

  test('an answer from another source address is dropped; the same answer from the nameserver is taken', async () => {
    const honest = await udpAnswerer('192.0.2.10', false)
    try {
      const res = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.10')], {
        port: honest.port,
        timeoutMs: 2000,
      })
      assert.deepEqual(res, { verified: true, mismatches: [], refused: false })
    } finally {
      honest.close()
    }

    const forged = await udpAnswerer('192.0.2.10', true)
    try {
      const res = await verifyAtNameservers(ZONE, ['127.0.0.1'], [www('192.0.2.10')], {
        port: forged.port,
        timeoutMs: 300,
      })
      assert.ok(forged.sent() > 0, 'the forger answered')
      assert.equal(res.verified, false)
      assert.equal(res.refused, false)
      assert.match(
        res.mismatches[0]!,
        new RegExp(
          `^127\\.0\\.0\\.1 did not answer www\\.${ZONE} A: no answer from 127\\.0\\.0\\.1:${forged.port} within \\d+ ms$`,
        ),
      )
    } finally {
      forged.close()
    }
  })
})
