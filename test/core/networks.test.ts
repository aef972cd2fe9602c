import { describe, expect, it } from 'vitest'
import { createAssetTable, describeNetwork, KNOWN_NETWORKS, SOLANA_MAINNET, toCaip2 } from '../../src/index.js'
import { evmChainId } from '../../src/networks/networks.js'

describe('network table', () => {
  it('maps v1 names to CAIP-2 ids and back', () => {
    expect(toCaip2('base')).toBe('eip155:8453')
    expect(toCaip2('base-sepolia')).toBe('eip155:84532')
    expect(toCaip2('solana')).toBe(SOLANA_MAINNET)
    expect(describeNetwork('eip155:8453')?.v1Name).toBe('base')
    expect(describeNetwork('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1')?.v1Name).toBe('solana-devnet')
  })

  it('lists every network of the public implementations', () => {
    const names = KNOWN_NETWORKS.map((n) => n.v1Name)
    for (const name of ['base', 'base-sepolia', 'avalanche', 'avalanche-fuji', 'polygon', 'polygon-amoy', 'sei', 'sei-testnet', 'iotex', 'peaq', 'abstract', 'solana', 'solana-devnet', 'solana-testnet']) {
      expect(names).toContain(name)
    }
    expect(new Set(KNOWN_NETWORKS.map((n) => n.caip2)).size).toBe(KNOWN_NETWORKS.length)
  })

  it('describes configured CAIP-2 ids and refuses anything else', () => {
    expect(describeNetwork('eip155:31337')).toEqual({ caip2: 'eip155:31337', family: 'eip155', testnet: false })
    expect(describeNetwork('eip155:0x1')).toBeUndefined()
    expect(describeNetwork('cosmos:hub')).toBeUndefined()
    expect(describeNetwork('basee')).toBeUndefined()
    expect(evmChainId('eip155:8453')).toBe(8453)
  })

  it('knows USDC with its EIP-712 domain, case-insensitively on EVM', () => {
    const table = createAssetTable()
    const usdc = table.find('eip155:8453', '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913')
    expect(usdc).toMatchObject({ decimals: 6, usdPrice: 1, eip712: { name: 'USD Coin', version: '2' } })
    const custom = createAssetTable([{ network: 'eip155:31337', address: '0xAbC', symbol: 'TST', decimals: 18 }])
    expect(custom.find('eip155:31337', '0xabc')?.symbol).toBe('TST')
    expect(table.find('eip155:31337', '0xabc')).toBeUndefined()
  })
})

describe('RPC URLs in the adapters\' configuration', () => {
  it('refuse an undefined, empty or non-http URL when the factory is called, naming the option and never quoting it', async () => {
    const { exactEvm, privateKeySigner } = await import('../../src/evm/index.js')
    const { exactSvm } = await import('../../src/svm/index.js')
    const { generateKeyPairSigner } = await import('@solana/kit')
    const signer = privateKeySigner(`0x${'22'.repeat(32)}`)
    const evm = (rpcUrls: unknown[]) => () => exactEvm({ networks: [{ network: 'base', rpcUrls: rpcUrls as string[] }], signers: [signer] })
    expect(evm([undefined])).toThrow(expect.objectContaining({ code: 'misconfigured', message: 'exactEvm: rpcUrls of eip155:8453: URL 1 is empty or undefined (is its environment variable set?)' }))
    expect(evm(['https://ok.example', ''])).toThrow(/URL 2 is empty/)
    expect(evm(['wss://secret-host/KEY'])).toThrow(expect.objectContaining({ message: 'exactEvm: rpcUrls of eip155:8453: URL 1 is not an http:// or https:// URL' }))
    const feePayer = await generateKeyPairSigner()
    expect(() => exactSvm({ networks: [{ network: 'solana', rpcUrl: undefined }], feePayers: [feePayer] })).toThrow(/has no rpcUrls/)
    expect(() => exactSvm({ networks: [{ network: 'solana', rpcUrls: [' '] }], feePayers: [feePayer] })).toThrow(/URL 1 is empty or undefined/)
  })
})
