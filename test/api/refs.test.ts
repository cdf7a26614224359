import t from 'tap'
import { referencedIds } from '../../src/api/actions.js'

t.test('reference paths pick the ids a parameter set names', async (t) => {
  const table: Array<[Record<string, unknown>, string, string[]]> = [
    [{ hostId: 'h1' }, 'hostId', ['h1']],
    [{}, 'hostId', []],
    [{ hostId: 5 }, 'hostId', []],
    [{ vdis: [{ sr: 'a' }, { size: 1 }, { sr: 'b' }] }, 'vdis[].sr', ['a', 'b']],
    [{ vdis: 'oops' }, 'vdis[].sr', []],
    [{ vifs: [{ network: 'n' }, null] }, 'vifs[].network', ['n']],
  ]
  for (const [params, path, expected] of table) t.same(referencedIds(params, path), expected, `${path} in ${JSON.stringify(params)}`)
})
