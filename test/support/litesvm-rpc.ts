/**
 * A loopback Solana JSON-RPC server over an in-process LiteSVM, for tests,
 * benchmarks and demos. It answers the methods a facilitator and the official
 * x402 clients call (JSON-RPC batches included), with real SPL Token,
 * Token-2022 and ATA programs underneath. No websockets: confirm by polling
 * getSignatureStatuses.
 *
 * Knobs for settlement tests: `hold` keeps sent transactions unprocessed
 * (pending) until `release()`, `drop` discards them (lost by the network),
 * `advanceBlocks(n)` moves the block height so blockhashes expire,
 * `hideStatuses` makes getSignatureStatuses lag behind the chain, and
 * `failNext` makes the next requests fail at the HTTP level.
 *
 * @example
 * const chain = await startLiteSvmRpc()
 * const rpc = createSolanaRpc(chain.url)
 * await rpc.getLatestBlockhash().send()
 * await chain.close()
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  address,
  type Address,
  type EncodedAccount,
  getAddressCodec,
  getBase58Decoder,
  getBase58Encoder,
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  getTransactionEncoder,
  lamports as lamportsOf,
  type Signature,
  type Transaction,
} from '@solana/kit'
import { getMintDecoder, getTokenDecoder, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { FailedTransactionMetadata, LiteSVM } from 'litesvm'
import { decodeBase58, isSolanaAddress } from '../../src/svm/codec/base58.js'

const TOKEN_2022 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb'
/** Blocks a blockhash stays valid for, as on mainnet. */
const BLOCKHASH_LIFETIME = 150
/** rentEpoch of every account: the u64 max, which JSON.stringify cannot write exactly. */
const U64_MAX_SENTINEL = '__U64_MAX__'

const TRANSACTION_ERRORS = [
  'AccountInUse', 'AccountLoadedTwice', 'AccountNotFound', 'ProgramAccountNotFound', 'InsufficientFundsForFee',
  'InvalidAccountForFee', 'AlreadyProcessed', 'BlockhashNotFound', 'CallChainTooDeep', 'MissingSignatureForFee',
  'InvalidAccountIndex', 'SignatureFailure', 'InvalidProgramForExecution', 'SanitizeFailure', 'ClusterMaintenance',
  'AccountBorrowOutstanding', 'WouldExceedMaxBlockCostLimit', 'UnsupportedVersion', 'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit', 'WouldExceedAccountDataBlockLimit', 'TooManyAccountLocks',
  'AddressLookupTableNotFound', 'InvalidAddressLookupTableOwner', 'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex', 'InvalidRentPayingAccount', 'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit', 'MaxLoadedAccountsDataSizeExceeded', 'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit', 'UnbalancedTransaction', 'ProgramCacheHitMaxLimit', 'CommitCancelled',
]
const INSTRUCTION_ERRORS = [
  'GenericError', 'InvalidArgument', 'InvalidInstructionData', 'InvalidAccountData', 'AccountDataTooSmall',
  'InsufficientFunds', 'IncorrectProgramId', 'MissingRequiredSignature', 'AccountAlreadyInitialized',
  'UninitializedAccount', 'UnbalancedInstruction', 'ModifiedProgramId', 'ExternalAccountLamportSpend',
  'ExternalAccountDataModified', 'ReadonlyLamportChange', 'ReadonlyDataModified', 'DuplicateAccountIndex',
  'ExecutableModified', 'RentEpochModified', 'NotEnoughAccountKeys', 'AccountDataSizeChanged', 'AccountNotExecutable',
  'AccountBorrowFailed', 'AccountBorrowOutstanding', 'DuplicateAccountOutOfSync', 'InvalidError',
  'ExecutableDataModified', 'ExecutableLamportChange', 'ExecutableAccountNotRentExempt', 'UnsupportedProgramId',
  'CallDepth', 'MissingAccount', 'ReentrancyNotAllowed', 'MaxSeedLengthExceeded', 'InvalidSeeds', 'InvalidRealloc',
  'ComputationalBudgetExceeded', 'PrivilegeEscalation', 'ProgramEnvironmentSetupFailure', 'ProgramFailedToComplete',
  'ProgramFailedToCompile', 'Immutable', 'IncorrectAuthority', 'AccountNotRentExempt', 'InvalidAccountOwner',
  'ArithmeticOverflow', 'UnsupportedSysvar', 'IllegalOwner', 'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded', 'MaxInstructionTraceLengthExceeded', 'BuiltinProgramsMustConsumeComputeUnits', 'BorshIoError',
]

/** What the server remembers of a processed transaction. */
interface ProcessedTransaction {
  slot: number
  err: unknown
  wire: string
  logs: string[]
  unitsConsumed: number
  fee: number
}

/** A running loopback RPC. */
export interface LiteSvmRpc {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly svm: LiteSVM
  /** HTTP requests served (a JSON-RPC batch counts once). */
  readonly stats: { requests: number; calls: Record<string, number> }
  /** Forgets the request counts. */
  resetStats(): void
  /** While true, sent transactions are queued unprocessed (status null) until `release()`. */
  hold: boolean
  /** While true, sent transactions are silently discarded, as a congested network might. */
  drop: boolean
  /** While true, getSignatureStatuses answers null for every signature, as a node lagging behind the cluster does. */
  hideStatuses: boolean
  /** Processes the held transactions. */
  release(): void
  /** Moves the block height by `blocks`; blockhashes older than 150 blocks become invalid. */
  advanceBlocks(blocks: number): void
  /** The next `count` HTTP requests answer 503. */
  failNext(count: number): void
  close(): Promise<void>
}

/** Options of {@link startLiteSvmRpc}. */
export interface LiteSvmRpcOptions {
  /** An existing LiteSVM (with accounts set up); a fresh one by default. */
  svm?: LiteSVM
}

/**
 * Starts the server on a free loopback port.
 */
export async function startLiteSvmRpc(options: LiteSvmRpcOptions = {}): Promise<LiteSvmRpc> {
  const svm = options.svm ?? new LiteSVM()
  const processed = new Map<string, ProcessedTransaction>()
  const held: Transaction[] = []
  let blockHeight = 1000
  const issued = new Map<string, number>([[svm.latestBlockhash(), blockHeight]])
  let failures = 0

  const currentBlockhash = (): string => {
    const hash = svm.latestBlockhash()
    if (!issued.has(hash)) issued.set(hash, blockHeight)
    return hash
  }
  const blockhashValid = (hash: string): boolean => {
    const at = issued.get(hash)
    return at !== undefined && blockHeight - at <= BLOCKHASH_LIFETIME
  }
  const slot = () => Number(svm.getClock().slot)

  function execute(tx: Transaction): void {
    const signature = signatureOf(tx)
    if (processed.has(signature)) return
    const result = svm.sendTransaction(tx)
    const failed = result instanceof FailedTransactionMetadata
    const meta = failed ? result.meta() : result
    const err = failed ? convertError(result.err()) : null
    // Transactions that never reached execution (bad blockhash, duplicate, signature) leave no trace on chain.
    if (err === 'BlockhashNotFound' || err === 'AlreadyProcessed' || err === 'SignatureFailure') return
    processed.set(signature, {
      slot: slot(),
      err,
      wire: getBase64Decoder().decode(getTransactionEncoderBytes(tx)),
      logs: meta.logs(),
      unitsConsumed: Number(meta.computeUnitsConsumed()),
      fee: 5000 * Object.keys(tx.signatures).length,
    })
  }

  function simulate(tx: Transaction, sigVerify: boolean, replaceBlockhash: boolean) {
    try {
      if (!sigVerify) svm.withSigverify(false)
      if (replaceBlockhash) svm.withBlockhashCheck(false)
      const result = svm.simulateTransaction(tx)
      if (result instanceof FailedTransactionMetadata) {
        const meta = result.meta()
        return { err: convertError(result.err()), logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()), postAccounts: (_wanted: readonly string[]) => new Map<string, EncodedAccount>() }
      }
      const meta = result.meta()
      // The accounts the transaction wrote, as they stand after it: read only when a caller asks for
      // some (every account copied out of LiteSVM costs the chain's CPU, for either facilitator).
      const postAccounts = (wanted: readonly string[]) => postAccountsOf(result, wanted)
      return { err: null, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()), postAccounts }
    } finally {
      svm.withSigverify(true)
      svm.withBlockhashCheck(true)
    }
  }

  const methods: Record<string, (params: unknown[]) => unknown> = {
    getHealth: () => 'ok',
    // The chain the tests call solana-devnet (CAIP-2 solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1).
    getGenesisHash: () => 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG',
    getVersion: () => ({ 'solana-core': '2.2.0', 'feature-set': 0 }),
    getSlot: () => slot(),
    getBlockHeight: () => blockHeight,
    getLatestBlockhash: () => context({ blockhash: currentBlockhash(), lastValidBlockHeight: blockHeight + BLOCKHASH_LIFETIME }),
    isBlockhashValid: ([hash]) => context(typeof hash === 'string' && hash === currentBlockhash() ? true : blockhashValid(String(hash))),
    getBalance: ([key]) => context(Number(svm.getBalance(address(String(key))) ?? 0n)),
    getMinimumBalanceForRentExemption: ([size]) => Number(svm.minimumBalanceForRentExemption(BigInt(Number(size)))),
    getFeeForMessage: ([message]) => {
      const bytes = getBase64Encoder().encode(String(message))
      const compiled = getCompiledTransactionMessageDecoder().decode(bytes)
      return context(5000 * compiled.header.numSignerAccounts)
    },
    getAccountInfo: ([key, config]) => context(encodeAccount(svm, String(key), encodingOf(config))),
    getMultipleAccounts: ([keys, config]) =>
      context((Array.isArray(keys) ? keys : []).map((key) => encodeAccount(svm, String(key), encodingOf(config)))),
    getTokenAccountBalance: ([key]) => {
      const account = svm.getAccount(address(String(key)))
      if (!account.exists) throw new RpcError(-32602, 'Invalid param: could not find account')
      const token = getTokenDecoder().decode(account.data)
      const decimals = mintDecimals(svm, token.mint)
      return context(uiAmount(token.amount, decimals))
    },
    getSignatureStatuses: ([signatures]) =>
      context(
        (Array.isArray(signatures) ? signatures : []).map((signature) => {
          const tx = handle.hideStatuses ? undefined : processed.get(String(signature))
          if (!tx) return null
          return { slot: tx.slot, confirmations: null, err: tx.err, status: tx.err ? { Err: tx.err } : { Ok: null }, confirmationStatus: 'finalized' }
        }),
      ),
    getTransaction: ([signature]) => {
      const tx = processed.get(String(signature))
      if (!tx) return null
      return {
        slot: tx.slot,
        blockTime: Math.floor(Date.now() / 1000),
        version: 0,
        transaction: [tx.wire, 'base64'],
        meta: {
          err: tx.err,
          status: tx.err ? { Err: tx.err } : { Ok: null },
          fee: tx.fee,
          logMessages: tx.logs,
          computeUnitsConsumed: tx.unitsConsumed,
          preBalances: [],
          postBalances: [],
          innerInstructions: [],
          preTokenBalances: [],
          postTokenBalances: [],
          rewards: [],
          loadedAddresses: { writable: [], readonly: [] },
        },
      }
    },
    simulateTransaction: ([wire, config]) => {
      const options = isRecord(config) ? config : {}
      const tx = decodeTransaction(wire, options.encoding)
      const sigVerify = options.sigVerify === true
      const replace = options.replaceRecentBlockhash === true
      if (sigVerify && !fullySigned(tx)) throw new RpcError(-32003, 'Transaction signature verification failure')
      // As Agave: `accounts.addresses` are answered in their state after the simulation (null each when it failed),
      // never in base58, and no more of them than the transaction has accounts.
      const wanted = isRecord(options.accounts) && Array.isArray(options.accounts.addresses) ? options.accounts.addresses.map(String) : undefined
      const accountsEncoding = isRecord(options.accounts) && typeof options.accounts.encoding === 'string' ? options.accounts.encoding : 'base64'
      if (wanted && (accountsEncoding === 'base58' || accountsEncoding === 'binary')) throw new RpcError(-32602, 'base58 encoding not supported')
      if (wanted && wanted.length > staticAccountCount(tx.messageBytes)) {
        throw new RpcError(-32602, 'Too many accounts provided')
      }
      const result = simulate(tx, sigVerify, replace)
      return context({
        err: result.err,
        logs: result.logs,
        accounts: wanted
          ? ((post) => wanted.map((key) => (result.err ? null : encodeAccount(svm, key, accountsEncoding, post.get(key)))))(result.postAccounts(wanted))
          : null,
        unitsConsumed: result.unitsConsumed,
        returnData: null,
        innerInstructions: null,
        ...(replace ? { replacementBlockhash: { blockhash: currentBlockhash(), lastValidBlockHeight: blockHeight + BLOCKHASH_LIFETIME } } : {}),
      })
    },
    sendTransaction: ([wire, config]) => {
      const options = isRecord(config) ? config : {}
      const tx = decodeTransaction(wire, options.encoding)
      if (!fullySigned(tx)) throw new RpcError(-32003, 'Transaction signature verification failure')
      const signature = signatureOf(tx)
      if (options.skipPreflight !== true && !processed.has(signature)) {
        const result = simulate(tx, true, false)
        if (result.err) throw new RpcError(-32002, `Transaction simulation failed: ${JSON.stringify(result.err)}`, { err: result.err, logs: result.logs })
      }
      if (handle.drop) return signature
      if (handle.hold) held.push(tx)
      else execute(tx)
      return signature
    },
    requestAirdrop: ([key, lamports]) => {
      svm.airdrop(address(String(key)), lamportsOf(BigInt(Number(lamports))))
      return getBase58Decoder().decode(new Uint8Array(64))
    },
  }

  const stats = { requests: 0, calls: {} as Record<string, number> }

  const answer = (request: unknown): unknown => {
    if (!isRecord(request) || typeof request.method !== 'string') {
      return { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } }
    }
    const id = request.id ?? null
    stats.calls[request.method] = (stats.calls[request.method] ?? 0) + 1
    const method = methods[request.method]
    if (!method) return { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } }
    try {
      return { jsonrpc: '2.0', id, result: method(Array.isArray(request.params) ? request.params : []) }
    } catch (error) {
      if (error instanceof RpcError) return { jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data ? { data: error.data } : {}) } }
      return { jsonrpc: '2.0', id, error: { code: -32603, message: error instanceof Error ? error.message : 'internal error' } }
    }
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      stats.requests += 1
      if (failures > 0) {
        failures -= 1
        res.writeHead(503).end('unavailable')
        return
      }
      let body: unknown
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }))
        return
      }
      const result = Array.isArray(body) ? body.map(answer) : answer(body)
      res.writeHead(200, { 'content-type': 'application/json' }).end(serialize(result))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  const handle: LiteSvmRpc = {
    url: `http://127.0.0.1:${port}`,
    svm,
    stats,
    resetStats() {
      stats.requests = 0
      stats.calls = {}
    },
    hold: false,
    drop: false,
    hideStatuses: false,
    release() {
      for (const tx of held.splice(0)) execute(tx)
    },
    advanceBlocks(blocks) {
      blockHeight += blocks
      svm.warpToSlot(svm.getClock().slot + BigInt(blocks))
      svm.expireBlockhash()
      currentBlockhash()
    },
    failNext(count) {
      failures = count
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error ? reject(error) : resolve()))
      }),
  }
  return handle
}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const context = (value: unknown) => ({ context: { slot: 1, apiVersion: '2.2.0' }, value })

function encodingOf(config: unknown): string {
  return isRecord(config) && typeof config.encoding === 'string' ? config.encoding : 'base58'
}

function decodeTransaction(wire: unknown, encoding: unknown): Transaction {
  if (typeof wire !== 'string') throw new RpcError(-32602, 'invalid transaction')
  try {
    const bytes = encoding === 'base64' ? getBase64Encoder().encode(wire) : base58Bytes(wire)
    return getTransactionDecoder().decode(bytes)
  } catch {
    throw new RpcError(-32602, 'failed to deserialize the transaction')
  }
}

function base58Bytes(text: string): Uint8Array {
  // kit's base58 *encoder* turns a base58 string into bytes.
  return new Uint8Array(getBase58Encoder().encode(text))
}

function getTransactionEncoderBytes(tx: Transaction): Uint8Array {
  return new Uint8Array(getTransactionEncoder().encode(tx))
}

function signatureOf(tx: Transaction): Signature {
  const first = Object.values(tx.signatures)[0]
  if (!first) throw new RpcError(-32602, 'transaction has no signatures')
  return getBase58Decoder().decode(first) as Signature
}

function fullySigned(tx: Transaction): boolean {
  return Object.values(tx.signatures).every((signature) => signature !== null)
}

/** An account in the RPC's JSON shape: `post`, when given, is its state after a simulation, else the chain's. */
/**
 * The number of static accounts of a message, read from its bytes: kit's message decoder
 * base58-encodes every account on the way (most of the cost of an `accounts` request here).
 */
function staticAccountCount(message: ArrayLike<number>): number {
  // A versioned message starts with 0x80 | version; then three header bytes; then a compact-u16 count.
  let at = (message[0]! & 0x80) !== 0 ? 4 : 3
  let count = 0
  for (let shift = 0; shift < 21; shift += 7) {
    const byte = message[at++]!
    count |= (byte & 0x7f) << shift
    if ((byte & 0x80) === 0) break
  }
  return count
}

/** What LiteSVM's binding hands out for one account after a simulation (its wrapper's `inner`). */
interface RawPostAccount {
  address: Uint8Array
  account(): { data(): Uint8Array; executable(): boolean; lamports(): bigint; owner(): Uint8Array }
}

/**
 * The wanted accounts' state after a simulation, as a node answers `accounts` of
 * simulateTransaction. LiteSVM's own `postAccounts()` base58-encodes every written account
 * through kit's generic codec (about 100 µs for a transfer's three, three times the simulation
 * itself): the raw list is matched by bytes and only the wanted ones are converted, so the
 * benchmark's chain pays for this what a node would.
 */
function postAccountsOf(result: unknown, wanted: readonly string[]): Map<string, EncodedAccount> {
  const inner = (result as { inner?: { postAccounts?: () => RawPostAccount[] } }).inner
  const out = new Map<string, EncodedAccount>()
  if (!inner?.postAccounts) {
    for (const account of (result as { postAccounts(): EncodedAccount[] }).postAccounts()) out.set(account.address, account)
    return out
  }
  const bytesOf = new Map(wanted.map((key) => [hexOfAddress(key), key]))
  for (const raw of inner.postAccounts()) {
    const key = bytesOf.get(Buffer.from(raw.address).toString('hex'))
    if (key === undefined) continue
    const account = raw.account()
    const data = account.data()
    // `key` passed hexOfAddress (an address, or it threw there).
    out.set(key, { address: key as Address, executable: account.executable(), lamports: lamportsOf(account.lamports()), programAddress: addressOfBytes(account.owner()), space: BigInt(data.length), data } as EncodedAccount)
  }
  return out
}

// Base58 through kit's generic codec costs tens of microseconds an address, and a benchmark's chain
// converts the same few (the payer's token account, the token program) for every simulation: both
// directions are remembered, as a node (which keeps keys as bytes) pays nothing for them.
const addressCodec = getAddressCodec()
const hexByAddress = new Map<string, string>()
const addressByHex = new Map<string, Address>()
function hexOfAddress(key: string): string {
  let hex = hexByAddress.get(key)
  if (hex === undefined) {
    if (hexByAddress.size >= 10_000) hexByAddress.clear()
    // Our limb decoder, not kit's codec (two BigInt passes, ~40 µs for each new payer's account): a node reads keys in microseconds.
    const bytes = isSolanaAddress(key) ? decodeBase58(key)! : addressCodec.encode(address(key))
    hex = Buffer.from(bytes).toString('hex')
    hexByAddress.set(key, hex)
  }
  return hex
}
function addressOfBytes(bytes: Uint8Array): Address {
  const hex = Buffer.from(bytes).toString('hex')
  let key = addressByHex.get(hex)
  if (key === undefined) {
    if (addressByHex.size >= 10_000) addressByHex.clear()
    key = addressCodec.decode(bytes)
    addressByHex.set(hex, key)
  }
  return key
}

function encodeAccount(svm: LiteSVM, key: string, encoding: string, post?: EncodedAccount): unknown {
  const stored = post ?? svm.getAccount(address(key))
  if ('exists' in stored && !stored.exists) return null
  const account = stored as EncodedAccount
  const owner = account.programAddress
  const base = { executable: account.executable, lamports: Number(account.lamports), owner, rentEpoch: U64_MAX_SENTINEL, space: account.data.length }
  if (encoding === 'jsonParsed' && (owner === TOKEN_PROGRAM_ADDRESS || owner === TOKEN_2022)) {
    const program = owner === TOKEN_PROGRAM_ADDRESS ? 'spl-token' : 'spl-token-2022'
    try {
      if (account.data.length === 82) {
        const mint = getMintDecoder().decode(account.data)
        return {
          ...base,
          data: {
            program,
            space: account.data.length,
            parsed: {
              type: 'mint',
              info: {
                decimals: mint.decimals,
                supply: mint.supply.toString(),
                isInitialized: mint.isInitialized,
                mintAuthority: mint.mintAuthority.__option === 'Some' ? mint.mintAuthority.value : null,
                freezeAuthority: mint.freezeAuthority.__option === 'Some' ? mint.freezeAuthority.value : null,
              },
            },
          },
        }
      }
      const token = getTokenDecoder().decode(account.data)
      return {
        ...base,
        data: {
          program,
          space: account.data.length,
          parsed: {
            type: 'account',
            info: {
              mint: token.mint,
              owner: token.owner,
              isNative: false,
              state: token.state === 2 ? 'frozen' : 'initialized',
              tokenAmount: uiAmount(token.amount, mintDecimals(svm, token.mint)),
            },
          },
        },
      }
    } catch {
      // Not a plain mint or token account: fall back to base64 as real nodes do.
    }
  }
  if (encoding === 'base58') return { ...base, data: getBase58Decoder().decode(account.data) }
  return { ...base, data: [getBase64Decoder().decode(account.data), 'base64'] }
}

function mintDecimals(svm: LiteSVM, mint: string): number {
  const account = svm.getAccount(address(mint))
  return account.exists ? getMintDecoder().decode(account.data.slice(0, 82)).decimals : 0
}

function uiAmount(amount: bigint, decimals: number) {
  const text = amount.toString().padStart(decimals + 1, '0')
  const uiAmountString = decimals > 0 ? `${text.slice(0, -decimals)}.${text.slice(-decimals)}`.replace(/\.?0+$/, '') : text
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString }
}

/** LiteSVM's error objects in the JSON shape Solana nodes use. */
function convertError(err: unknown): unknown {
  if (typeof err === 'number') return TRANSACTION_ERRORS[err] ?? `TransactionError${err}`
  if (isRecord(err) || typeof err === 'object') {
    const value = err as { index?: number; err?: () => unknown; accountIndex?: number; constructor?: { name?: string } }
    const kind = value.constructor?.name ?? ''
    if (typeof value.err === 'function' && typeof value.index === 'number') {
      const inner = value.err()
      if (typeof inner === 'number') return { InstructionError: [value.index, INSTRUCTION_ERRORS[inner] ?? 'GenericError'] }
      if (inner && typeof inner === 'object' && 'code' in inner) return { InstructionError: [value.index, { Custom: Number((inner as { code: number }).code) }] }
      if (inner && typeof inner === 'object' && 'msg' in inner) return { InstructionError: [value.index, { BorshIoError: String((inner as { msg: string }).msg) }] }
      return { InstructionError: [value.index, 'GenericError'] }
    }
    if (kind.includes('DuplicateInstruction') && typeof value.index === 'number') return { DuplicateInstruction: value.index }
    if (kind.includes('InsufficientFundsForRent')) return { InsufficientFundsForRent: { account_index: value.accountIndex } }
    if (kind.includes('ProgramExecutionTemporarilyRestricted')) return { ProgramExecutionTemporarilyRestricted: { account_index: value.accountIndex } }
  }
  return 'GenericError'
}

/** JSON with u64 fields written as exact integer literals. */
function serialize(value: unknown): string {
  return JSON.stringify(value).replaceAll(`"${U64_MAX_SENTINEL}"`, '18446744073709551615')
}

