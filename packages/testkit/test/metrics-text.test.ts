import assert from 'node:assert/strict'
import { test } from 'node:test'
import { metric } from '../src/index.ts'

test('metric reads one series from Prometheus text, by name and labels', () => {
  const text = [
    '# HELP x_total things',
    'x_total{result="ok",route="/a"} 3',
    'x_total{result="failed",route="/a"} 1',
    'x_total_extra 9',
    'y_sum 12.5',
    'y_count 4',
  ].join('\n')
  assert.equal(metric(text, 'x_total', { result: 'failed' }), 1)
  assert.equal(metric(text, 'x_total', { result: 'ok', route: '/a' }), 3)
  assert.equal(metric(text, 'y_sum'), 12.5)
  assert.equal(metric(text, 'y_count'), 4)
  // A longer name sharing the prefix is another series; a missing one is undefined.
  assert.equal(metric(text, 'x_total', { result: 'gone' }), undefined)
  assert.equal(metric(text, 'y'), undefined)
})
