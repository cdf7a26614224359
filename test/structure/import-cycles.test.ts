import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { packageRoot } from '../../src/paths.js'

/** The service's sources: src/ and the worker pipelines it runs (workers/). */
const ROOTS = [join(packageRoot, 'src'), join(packageRoot, 'workers')]

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** The local modules a file imports or re-exports from, type-only ones included (`.js` specifiers name `.ts` sources). */
function localImports(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, false)
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, '.ts')))
}

/** Each strongly connected component of more than one file, or a file importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (node: string): void => {
    index.set(node, index.size)
    low.set(node, index.get(node) ?? 0)
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component: string[] = []
    for (let member = stack.pop(); member !== undefined; member = member === node ? undefined : stack.pop()) {
      onStack.delete(member)
      component.push(member)
    }
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort())
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return found
}

/** A shortest loop from the component's first file back to it, to show how the circle closes. */
function loop(graph: ReadonlyMap<string, readonly string[]>, component: readonly string[]): string[] {
  const [start] = component
  if (start === undefined) return []
  const members = new Set(component)
  const cameFrom = new Map<string, string>()
  const queue = [start]
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
    for (const next of graph.get(node) ?? []) {
      if (next === start) {
        const path = [start]
        for (let step: string | undefined = node; step !== start && step !== undefined; step = cameFrom.get(step)) path.splice(1, 0, step)
        return [...path, start]
      }
      if (members.has(next) && !cameFrom.has(next)) {
        cameFrom.set(next, node)
        queue.push(next)
      }
    }
  }
  return []
}

t.test('the cycle finder', async (t) => {
  const graph = (edges: Record<string, string[]>): Map<string, string[]> => new Map(Object.entries(edges))
  t.same(cycles(graph({ a: ['b'], b: ['c'], c: [] })), [], 'a chain')
  t.same(cycles(graph({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] })), [], 'a diamond')
  t.same(cycles(graph({ a: ['a'] })), [['a']], 'a self-import')
  t.same(cycles(graph({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] })), [['a', 'b', 'c']], 'a loop, without what only leads into it')
  t.same(
    cycles(graph({ a: ['b'], b: ['a'], c: ['d'], d: ['c'] })).sort(),
    [
      ['a', 'b'],
      ['c', 'd'],
    ],
    'two separate loops',
  )
  const square = graph({ a: ['b', 'x'], b: ['c'], c: ['d', 'a'], d: ['a'], x: [] })
  t.same(loop(square, ['a', 'b', 'c', 'd']), ['a', 'b', 'c', 'a'], 'the shortest way round')
})

t.test('no import circle in src/ and workers/, type imports included', async (t) => {
  const files = ROOTS.flatMap(sourceFiles)
  t.ok(files.length > 50, 'the sources were found')
  const graph = new Map(files.map((file) => [file, localImports(file)]))
  const unresolved = [...graph.values()].flat().filter((target) => !graph.has(target))
  t.same(unresolved, [], 'every relative import names a source file')
  const name = (file: string): string => relative(packageRoot, file)
  const report = cycles(graph).map(
    (component) => `${component.length} files in a circle (${component.map(name).join(', ')}), e.g. ${loop(graph, component).map(name).join(' → ')}`,
  )
  t.same(report, [], 'no circles')
})
