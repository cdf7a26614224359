import t from 'tap'
import { isUuid, UUID_PATTERN } from '../src/uuid.js'

const GOOD = '1b1f6f2e-2c4d-4a53-9d7e-6a3c2e0d9a01'

t.test('a lower-case 8-4-4-4-12 UUID, and nothing else', async (t) => {
  t.ok(isUuid(GOOD))
  t.ok(isUuid('00000000-0000-0000-0000-000000000000'), 'the nil UUID, as XAPI prints it')
  const bad: unknown[] = [
    GOOD.toUpperCase(),
    '1B1f6f2e-2c4d-4a53-9d7e-6a3c2e0d9a01',
    GOOD.replace(/-/g, ''),
    `{${GOOD}}`,
    `urn:uuid:${GOOD}`,
    `${GOOD}\n`,
    ` ${GOOD}`,
    `${GOOD}/..`,
    GOOD.slice(1),
    '1b1f6f2e-2c4d-4a53-9d7e-6a3c2e0d9a0g',
    '',
    undefined,
    42,
  ]
  for (const value of bad) t.notOk(isUuid(value), JSON.stringify(value) ?? String(value))
})

t.test('the pattern matches exactly what isUuid accepts, for schemas and names built around it', async (t) => {
  const schema = new RegExp(`^${UUID_PATTERN}$`, 'u')
  for (const value of [GOOD, GOOD.toUpperCase(), GOOD.replace(/-/g, ''), `x${GOOD}`]) t.equal(schema.test(value), isUuid(value), value)
})
