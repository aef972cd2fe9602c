import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url))

export default defineConfig({
  resolve: {
    // Examples import the package by name, as users do; tests run them against the sources.
    alias: [
      { find: /^x402-facilitator$/, replacement: src('index.ts') },
      { find: /^x402-facilitator\/http$/, replacement: src('http/index.ts') },
      { find: /^x402-facilitator\/evm$/, replacement: src('evm/index.ts') },
      { find: /^x402-facilitator\/svm$/, replacement: src('svm/index.ts') },
      { find: /^x402-facilitator\/stores\/redis$/, replacement: src('stores/redis-store.ts') },
      { find: /^x402-facilitator\/metrics$/, replacement: src('ops/metrics.ts') },
      { find: /^x402-facilitator\/stores\/sqlite$/, replacement: src('stores/sqlite/index.ts') },
      { find: /^x402-facilitator\/stores\/postgres$/, replacement: src('stores/postgres/index.ts') },
      { find: /^x402-facilitator\/server$/, replacement: src('resource-server/index.ts') },
      { find: /^x402-facilitator\/server\/batch$/, replacement: src('resource-server/batch/index.ts') },
      { find: /^x402-facilitator\/stats$/, replacement: src('stats/index.ts') },
      { find: /^x402-facilitator\/catalog$/, replacement: src('catalog/index.ts') },
      { find: /^x402-facilitator\/ledger$/, replacement: src('ledger/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Real chains, Redis and HTTP servers start in the tests: give them room.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
})
