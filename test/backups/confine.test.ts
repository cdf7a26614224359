import t from 'tap'
import { symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { rootLayout } from '../helpers/repository-roots.js'
import { confineRepository, repositoryPath } from '../../src/backups/confine.js'

t.test('repository URLs: dot segments, plain or percent-encoded, are folded before anything else', async (t) => {
  for (const url of ['file:///srv/backups/../etc', 'file:///srv/backups/%2e%2e/etc', 'file:///srv/backups/%2E%2e/etc', 'file:///srv/backups/.%2e/etc', 'file:///srv/backups/x/../../etc']) {
    t.equal(repositoryPath(url), '/srv/etc', url)
  }
  t.equal(repositoryPath('file:///srv/backups/%61b'), '/srv/backups/ab', 'other escapes are decoded')
  for (const url of ['file:///srv/backups/..%2f..%2fetc', 'file:///srv/backups/%2e%2e%2Fetc', 'file:///srv/a%00b']) t.throws(() => repositoryPath(url), { code: 'INVALID_PARAMETERS' }, url)
})

t.test('a repository inside a root is accepted as its real folder', async (t) => {
  const { root } = rootLayout(t)
  t.equal(await confineRepository(`file://${root}`, [root]), root, 'the root itself')
  t.equal(await confineRepository(`file://${root}/real`, [root]), join(root, 'real'))
  t.equal(await confineRepository(`file://${root}/not-yet/deeper`, [root]), join(root, 'not-yet', 'deeper'), 'a folder not made yet')
  t.equal(await confineRepository(`file://${root}/alias/x`, [root]), join(root, 'real', 'x'), 'a link that stays inside resolves to where it points')
  writeFileSync(join(root, 'file'), '')
  t.equal(await confineRepository(`file://${root}/file/x`, [root]), join(root, 'file', 'x'), 'below a file: inside, and left to fail as no folder')
  t.equal(await confineRepository(`file://${root}/../root/real`, ['/elsewhere', root]), join(root, 'real'), 'any of several roots')
})

t.test('anything that resolves outside every root is refused with the code, the URL and the count of roots', async (t) => {
  const { base, root, outside } = rootLayout(t)
  const bad = [
    `file://${root}/../outside`,
    `file://${root}/%2e%2e/outside`,
    `file://${root}/real/.%2E/.%2e/outside`,
    `file://${outside}`,
    `file://${base}/root-sibling`,
    `file://${root}/escape`,
    `file://${root}/escape/deeper`,
    `file://${root}/dangling`,
    `file://${root}/dangling/deeper`,
    'file:///',
  ]
  for (const url of bad) {
    await t.rejects(confineRepository(url, [root, join(base, 'missing-root')]), { code: 'REPOSITORY_OUTSIDE_ROOTS', data: { url, rootCount: 2 } }, url)
  }
})

t.test('roots are resolved through links too', async (t) => {
  const { base, root } = rootLayout(t)
  symlinkSync(root, join(base, 'root-link'))
  t.equal(await confineRepository(`file://${base}/root-link/real`, [root]), join(root, 'real'), 'a repository named through a link to the root')
  t.equal(await confineRepository(`file://${root}/real`, [join(base, 'root-link')]), join(root, 'real'), 'a root named through a link')
  await t.rejects(confineRepository(`file://${root}/escape`, [join(base, 'root-link')]), { code: 'REPOSITORY_OUTSIDE_ROOTS' })
})
