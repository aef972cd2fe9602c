import { defineConfig } from 'tsup'

// One entry per capability so an embedder only loads the chain library it imports.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'http/index': 'src/http/index.ts',
    'testing/index': 'src/testing/index.ts',
    'evm/index': 'src/evm/index.ts',
    'svm/index': 'src/svm/index.ts',
    'stores/redis': 'src/stores/redis-store.ts',
    'ops/metrics': 'src/ops/metrics.ts',
    cli: 'src/cli/cli.ts',
    'stores/sqlite': 'src/stores/sqlite/index.ts',
    'stores/postgres': 'src/stores/postgres/index.ts',
    'server/index': 'src/resource-server/index.ts',
    'server/batch': 'src/resource-server/batch/index.ts',
    'stats/index': 'src/stats/index.ts',
    'catalog/index': 'src/catalog/index.ts',
    'ledger/index': 'src/ledger/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  splitting: true,
  treeshake: true,
  // Optional packages load at run time from the embedder's node_modules: bundled, they would lose
  // their WebAssembly files (tiny-secp256k1) or drag every hash of hash-wasm into dist.
  external: ['tiny-secp256k1', 'secp256k1', 'hash-wasm'],
  // zod is bundled, tree-shaken: from node_modules every entry of zod 4 loads its 64 locale modules
  // (about 50 ms before a first verify). Its types still come from the installed package.
  noExternal: ['zod'],
})
