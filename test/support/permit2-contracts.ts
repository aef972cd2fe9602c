/**
 * Permit2 and the x402 exact Permit2 proxy on an anvil node, at their canonical addresses (the
 * official clients sign typed data naming them). Permit2 is compiled from the sources shipped in
 * `@uniswap/v4-periphery` (`lib/permit2/`) with solc-js 0.8.17 (viaIR, as Uniswap built it) and cached;
 * the proxies are ours (test/support/contracts/X402*Permit2Proxy*.sol), written to the x402 spec.
 *
 * @example
 * const node = await startAnvil({ chainId: 84532 })
 * await installPermit2(node)
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { encodeAbiParameters, encodeFunctionData, keccak256, toHex, type Abi, type Address, type Hex, type LocalAccount } from 'viem'
import { PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY, X402_UPTO_PERMIT2_PROXY } from '../../src/evm/codec/permit2-abi.js'
import { permit2TypedData, uptoTypedData } from '../../src/evm/codec/permit2-typed-data.js'
import type { AnvilNode } from './anvil.js'
import { deployContract, type TestToken } from './evm-contracts.js'
import type { EvmFixture } from './evm-fixture.js'

const require = createRequire(import.meta.url)
const CONTRACTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'contracts')
const CACHE_DIR = join(process.cwd(), 'node_modules', '.cache', 'x402-facilitator-test')

interface SolcModule {
  version(): string
  compile(input: string, callbacks: { import: (path: string) => { contents: string } | { error: string } }): string
}

interface Compiled {
  readonly abi: Abi
  readonly bytecode: Hex
  readonly deployedBytecode: Hex
}

export interface Permit2Artifacts {
  readonly permit2: Compiled
  readonly exactProxy: Compiled
  readonly uptoProxy: Compiled
}

function compile(solc: SolcModule, sources: Record<string, { content: string }>, settings: object, resolve: (path: string) => string): Record<string, Record<string, Compiled>> {
  const output = JSON.parse(
    solc.compile(JSON.stringify({ language: 'Solidity', sources, settings }), {
      import: (path) => {
        try {
          return { contents: readFileSync(resolve(path), 'utf8') }
        } catch {
          return { error: `not found: ${path}` }
        }
      },
    }),
  ) as {
    errors?: { severity: string; formattedMessage: string }[]
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>
  }
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`)
  return Object.fromEntries(
    Object.entries(output.contracts).map(([file, contracts]) => [
      file,
      Object.fromEntries(Object.entries(contracts).map(([name, c]) => [name, { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` as Hex, deployedBytecode: `0x${c.evm.deployedBytecode.object}` as Hex }])),
    ]),
  )
}

/** Compiles Permit2 (solc 0.8.17, ~15 s) and the proxy, or reads both from the cache. */
export function compilePermit2Contracts(): Permit2Artifacts {
  const permit2Root = join(dirname(require.resolve('@uniswap/v4-periphery/package.json')), 'lib', 'permit2')
  const proxySource = readFileSync(join(CONTRACTS_DIR, 'X402ExactPermit2Proxy.sol'), 'utf8')
  const uptoSource = readFileSync(join(CONTRACTS_DIR, 'X402UptoPermit2Proxy.sol'), 'utf8')
  const baseSource = readFileSync(join(CONTRACTS_DIR, 'X402Permit2ProxyBase.sol'), 'utf8')
  const solc0817: SolcModule = require('solc-0817')
  const solc: SolcModule = require('solc')
  const permit2Source = readFileSync(join(permit2Root, 'src', 'Permit2.sol'), 'utf8')
  const key = createHash('sha256')
    .update(JSON.stringify({ proxySource, uptoSource, baseSource, permit2Source, solc: solc.version(), solc0817: solc0817.version(), v: 1 }))
    .digest('hex')
    .slice(0, 16)
  const cacheFile = join(CACHE_DIR, `permit2-${key}.json`)
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, 'utf8')) as Permit2Artifacts

  // Permit2's imports are relative ("./x.sol", "../y.sol") or remapped ("solmate/...").
  const resolvePermit2 = (path: string) => (path.startsWith('solmate/') ? join(permit2Root, 'lib', 'solmate', path.slice('solmate/'.length)) : join(permit2Root, path))
  const permit2Out = compile(
    solc0817,
    { 'src/Permit2.sol': { content: permit2Source } },
    { viaIR: true, optimizer: { enabled: true, runs: 1_000_000 }, outputSelection: { 'src/Permit2.sol': { Permit2: ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } } },
    (path) => resolvePermit2(posix.normalize(path)),
  )
  const proxyOut = compile(
    solc,
    { 'X402ExactPermit2Proxy.sol': { content: proxySource }, 'X402UptoPermit2Proxy.sol': { content: uptoSource }, 'X402Permit2ProxyBase.sol': { content: baseSource } },
    { evmVersion: 'cancun', optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } } },
    (path) => path,
  )
  const permit2 = permit2Out['src/Permit2.sol']?.Permit2
  const exactProxy = proxyOut['X402ExactPermit2Proxy.sol']?.X402ExactPermit2Proxy
  const uptoProxy = proxyOut['X402UptoPermit2Proxy.sol']?.X402UptoPermit2Proxy
  if (!permit2 || !exactProxy || !uptoProxy) throw new Error('solc produced no Permit2 or proxy')
  const artifacts = { permit2, exactProxy, uptoProxy }
  mkdirSync(CACHE_DIR, { recursive: true })
  writeFileSync(cacheFile, JSON.stringify(artifacts))
  return artifacts
}

const EIP712_DOMAIN_TYPEHASH = keccak256(toHex('EIP712Domain(string name,uint256 chainId,address verifyingContract)'))

function permit2DomainSeparator(chainId: number, at: Address): Hex {
  return keccak256(
    encodeAbiParameters([{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }, { type: 'address' }], [EIP712_DOMAIN_TYPEHASH, keccak256(toHex('Permit2')), BigInt(chainId), at]),
  )
}

/**
 * Installs Permit2 and the exact proxy at their canonical addresses. Permit2 is deployed
 * normally, then its runtime code (which holds the domain separator it computed with its
 * deployed address, as an immutable) is copied to the canonical address with that one value
 * replaced by the separator of the canonical address.
 */
export async function installPermit2(node: AnvilNode): Promise<void> {
  const { permit2, exactProxy, uptoProxy } = compilePermit2Contracts()
  const deployed = await deployContract(node, permit2)
  const code = await node.publicClient.getCode({ address: deployed })
  if (!code) throw new Error('Permit2 deployment left no code')
  const wrong = permit2DomainSeparator(node.chain.id, deployed).slice(2)
  const right = permit2DomainSeparator(node.chain.id, PERMIT2_ADDRESS).slice(2)
  const occurrences = code.split(wrong).length - 1
  if (occurrences < 1) throw new Error('the cached domain separator was not found in Permit2\'s runtime code')
  await node.testClient.setCode({ address: PERMIT2_ADDRESS, bytecode: code.split(wrong).join(right) as Hex })
  await node.testClient.setCode({ address: X402_EXACT_PERMIT2_PROXY, bytecode: exactProxy.deployedBytecode })
  await node.testClient.setCode({ address: X402_UPTO_PERMIT2_PROXY, bytecode: uptoProxy.deployedBytecode })
  const separator = await node.publicClient.readContract({ address: PERMIT2_ADDRESS, abi: permit2.abi, functionName: 'DOMAIN_SEPARATOR' })
  if (separator !== `0x${right}`) throw new Error('Permit2 at its canonical address does not answer its own domain separator')
}

/** The payer approves Permit2 for `amount` of the token (the one-time step of every Permit2 payer). */
export async function approvePermit2(node: AnvilNode, token: TestToken, payer: LocalAccount, amount: bigint): Promise<void> {
  const data = encodeFunctionData({ abi: token.abi, functionName: 'approve', args: [PERMIT2_ADDRESS, amount] })
  const hash = await node.walletClient(payer).sendTransaction({ account: payer, chain: node.chain, to: token.address, data })
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error('approve reverted')
}

/**
 * A new payer holding `amount` of the fixture's token (1,000,000 by default) and gas money, with
 * Permit2 approved for `approve` (everything by default; none when `0n`).
 */
export async function newPermit2Payer(fixture: Pick<EvmFixture, 'node' | 'token' | 'newPayer'>, options: { amount?: bigint; approve?: bigint } = {}): Promise<LocalAccount> {
  const payer = await fixture.newPayer(options.amount ?? 1_000_000n)
  await fixture.node.testClient.setBalance({ address: payer.address, value: 10n ** 18n })
  const approve = options.approve ?? 2n ** 256n - 1n
  if (approve > 0n) await approvePermit2(fixture.node, fixture.token, payer, approve)
  return payer
}

export { deployContract }

/** The fields of an `eip2612GasSponsoring` extension's info, as clients send them. */
export interface Eip2612PermitInfo {
  from: string
  asset: string
  spender: string
  amount: string
  nonce: string
  deadline: string
  signature: string
  version: string
}

/** An EIP-2612 permit of `fields` over the fixture token's domain, signed by `signer` (to forge or re-sign an extension). */
export function signEip2612Permit(world: EvmFixture, signer: LocalAccount, fields: Eip2612PermitInfo): Promise<Hex> {
  return signer.signTypedData({
    domain: { name: world.token.name, version: world.token.version, chainId: world.node.chainId, verifyingContract: world.token.address },
    types: {
      Permit: [
        { name: 'owner', type: 'address' },
        { name: 'spender', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'nonce', type: 'uint256' },
        { name: 'deadline', type: 'uint256' },
      ],
    },
    primaryType: 'Permit',
    message: { owner: fields.from as Hex, spender: fields.spender as Hex, value: BigInt(fields.amount), nonce: BigInt(fields.nonce), deadline: BigInt(fields.deadline) },
  })
}

/** An exact Permit2 payload's `permit2Authorization`, as the official client writes it. */
export interface Permit2AuthorizationFields {
  from: string
  permitted: { token: string; amount: string }
  spender: string
  nonce: string
  deadline: string
  witness: { to: string; validAfter: string }
}

/** The exact proxy's `PermitWitnessTransferFrom` over `fields`, signed by `signer` (to forge or re-sign a payload). */
export function signPermit2Authorization(world: EvmFixture, signer: LocalAccount, fields: Permit2AuthorizationFields): Promise<Hex> {
  return signer.signTypedData(permit2TypedData(world.node.chainId, witnessMessage(fields)))
}

/** An upto payload's `permit2Authorization`: the exact fields, with a witness that also names the facilitator. */
export interface UptoAuthorizationFields extends Omit<Permit2AuthorizationFields, 'witness'> {
  witness: { to: string; facilitator: string; validAfter: string }
}

/** The upto proxy's `PermitWitnessTransferFrom` over `fields` (witness: to, facilitator, validAfter), signed by `signer`. */
export function signUptoAuthorization(world: EvmFixture, signer: Pick<LocalAccount, 'signTypedData'>, fields: UptoAuthorizationFields): Promise<Hex> {
  return signer.signTypedData(uptoTypedData(world.node.chainId, { ...witnessMessage(fields), facilitator: fields.witness.facilitator as Hex }))
}

/** The payload's fields (decimal strings) as the signed message of src's typed data. */
function witnessMessage(fields: Omit<Permit2AuthorizationFields, 'witness'> & { witness: { to: string; validAfter: string } }) {
  return {
    token: fields.permitted.token as Hex,
    amount: BigInt(fields.permitted.amount),
    spender: fields.spender as Hex,
    nonce: BigInt(fields.nonce),
    deadline: BigInt(fields.deadline),
    to: fields.witness.to as Hex,
    validAfter: BigInt(fields.witness.validAfter),
  }
}
