import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'

const ROOT = join(__dirname, '..')

/** The example of docs/certificates.md's "Your own provider" section: its block that imports the package. */
function providerExample (): string {
  const doc = readFileSync(join(ROOT, 'docs', 'certificates.md'), 'utf8')
  const section = /\n## Your own provider\n([\s\S]*?)(?:\n## |$)/.exec(doc)?.[1] ?? ''
  const block = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').find((code) => code.includes("from 'fastify-forward-proxy'"))
  if (block === undefined) throw new Error('docs/certificates.md: no ts block importing fastify-forward-proxy under "## Your own provider"')
  return block
}

/**
 * Type-checks `code` as an ES module beside the package's sources, with `fastify-forward-proxy`
 * resolved to lib/index.ts and the repository's strictness; returns the diagnostics as text.
 */
function typeErrors (code: string): string[] {
  const fileName = join(ROOT, 'test', 'docs-certificate-provider-example.snippet.ts')
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    moduleDetection: ts.ModuleDetectionKind.Force,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    noUnusedLocals: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    baseUrl: ROOT,
    paths: { 'fastify-forward-proxy': ['lib/index.ts'] }
  }
  const host = ts.createCompilerHost(options)
  const readFile = host.readFile.bind(host)
  const getSourceFile = host.getSourceFile.bind(host)
  host.readFile = (name) => name === fileName ? code : readFile(name)
  host.fileExists = ((exists) => (name: string) => name === fileName || exists(name))(host.fileExists.bind(host))
  host.getSourceFile = (name, language, onError, create) => name === fileName
    ? ts.createSourceFile(name, code, language, true)
    : getSourceFile(name, language, onError, create)
  const program = ts.createProgram([fileName], options, host)
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(fileName))
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
}

test('docs: the custom certificate provider example of docs/certificates.md compiles against the package\'s types', async (t) => {
  const code = providerExample()
  t.match(code, /getCertificate \(destination: ForwardProxyDestination\)/, 'the example implements getCertificate')
  t.strictSame(typeErrors(code), [], 'no type error')
  t.not(typeErrors(code.replace('return leaves.get(destination.host) ?? null', 'return leaves.get(destination.port)')).length, 0, 'the check catches a provider that breaks the contract')
})
