// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

/// Moves `amount` of `token` from `payer` into the settlement contract (its caller) for `channelId`.
interface IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data) external;
}

/// A test version of x402BatchSettlement, written from the public x402 `batch-settlement` EVM spec:
/// unidirectional payment channels keyed by the EIP-712 hash of their config, cumulative vouchers
/// claimed in batches (accounting only), one sweep per receiver and token, cooperative refunds
/// (nonce advanced first) and a timed withdrawal as the payer's escape hatch.
contract X402BatchSettlement is EIP712, Multicall, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    struct Channel {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverTotals {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH = keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    uint40 public constant MIN_WITHDRAW_DELAY = 900;
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    mapping(bytes32 => Channel) public channels;
    mapping(bytes32 => PendingWithdrawal) public pendingWithdrawals;
    mapping(bytes32 => uint256) public refundNonce;
    mapping(address => mapping(address => ReceiverTotals)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 balance);
    event Claimed(bytes32 indexed channelId, uint128 totalClaimed, uint128 delta);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, uint256 nonce, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 initiatedAt);
    event WithdrawFinalized(bytes32 indexed channelId, uint128 amount);

    error InvalidChannelConfig();
    error WithdrawDelayOutOfRange();
    error ZeroAmount();
    error DepositNotReceived();
    error BalanceOverflow();
    error Unauthorized();
    error InvalidVoucherSignature(bytes32 channelId);
    error ClaimExceedsVoucher(bytes32 channelId);
    error ClaimExceedsBalance(bytes32 channelId);
    error MixedReceiverAuthorizers();
    error InvalidAuthorizerSignature();
    error InvalidRefundNonce();
    error EmptyBatch();
    error WithdrawAlreadyPending();
    error NoPendingWithdraw();
    error WithdrawTooEarly();
    error WithdrawExceedsAvailable();

    constructor() EIP712("x402 Batch Settlement", "1") {}

    // ---- identities and digests ----

    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    config.payer,
                    config.payerAuthorizer,
                    config.receiver,
                    config.receiverAuthorizer,
                    config.token,
                    config.withdrawDelay,
                    config.salt
                )
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTypedDataV4(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            VoucherClaim calldata c = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(CLAIM_ENTRY_TYPEHASH, getChannelId(c.voucher.channel), c.voucher.maxClaimableAmount, c.totalClaimed)
            );
        }
        return _hashTypedDataV4(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    // ---- deposits ----

    /// Anyone may deposit for a payer (the facilitator sponsors gas): the collector moves the payer's
    /// tokens under the payer's own signature, and the contract credits only what it received.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        _checkConfig(config);
        if (amount == 0) revert ZeroAmount();
        bytes32 channelId = getChannelId(config);
        IERC20 token = IERC20(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        if (token.balanceOf(address(this)) - before != amount) revert DepositNotReceived();

        Channel storage ch = channels[channelId];
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelCreated(channelId, config);
        uint256 next = uint256(ch.balance) + amount;
        if (next > type(uint128).max) revert BalanceOverflow();
        ch.balance = uint128(next);
        emit Deposited(channelId, msg.sender, amount, ch.balance);
    }

    // ---- claims and the sweep ----

    /// Claims by the receiver or its authorizer in person (every row must name the caller).
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            ChannelConfig calldata ch = voucherClaims[i].voucher.channel;
            if (msg.sender != ch.receiver && msg.sender != ch.receiverAuthorizer) revert Unauthorized();
        }
        _claim(voucherClaims);
    }

    /// Claims relayed by anyone, with one ClaimBatch signature of the rows' common receiver authorizer.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        for (uint256 i = 1; i < voucherClaims.length; i++) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert MixedReceiverAuthorizers();
        }
        if (!SignatureChecker.isValidSignatureNow(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        _claim(voucherClaims);
    }

    /// Raises each channel's totalClaimed to the row's value (a row at or below it changes nothing):
    /// within the payer's signed ceiling and the channel's balance. No token moves.
    function _claim(VoucherClaim[] calldata voucherClaims) private {
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            VoucherClaim calldata c = voucherClaims[i];
            ChannelConfig calldata config = c.voucher.channel;
            bytes32 channelId = getChannelId(config);
            _checkVoucher(config, channelId, c.voucher.maxClaimableAmount, c.signature);
            if (c.totalClaimed > c.voucher.maxClaimableAmount) revert ClaimExceedsVoucher(channelId);
            Channel storage ch = channels[channelId];
            if (c.totalClaimed > ch.balance) revert ClaimExceedsBalance(channelId);
            if (c.totalClaimed <= ch.totalClaimed) continue;
            uint128 delta = c.totalClaimed - ch.totalClaimed;
            ch.totalClaimed = c.totalClaimed;
            receivers[config.receiver][config.token].totalClaimed += delta;
            emit Claimed(channelId, c.totalClaimed, delta);
        }
    }

    /// Transfers everything claimed and not yet settled for `receiver` and `token`, in one transfer. Permissionless.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverTotals storage r = receivers[receiver][token];
        uint128 amount = r.totalClaimed - r.totalSettled;
        r.totalSettled = r.totalClaimed;
        if (amount > 0) IERC20(token).safeTransfer(receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---- cooperative refunds ----

    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert Unauthorized();
        bytes32 channelId = getChannelId(config);
        _refund(config, channelId, amount);
    }

    function refundWithSignature(ChannelConfig calldata config, uint128 amount, uint256 nonce, bytes calldata receiverAuthorizerSignature)
        external
        nonReentrant
    {
        bytes32 channelId = getChannelId(config);
        if (nonce != refundNonce[channelId]) revert InvalidRefundNonce();
        if (!SignatureChecker.isValidSignatureNow(config.receiverAuthorizer, getRefundDigest(channelId, nonce, amount), receiverAuthorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        _refund(config, channelId, amount);
    }

    /// The nonce advances first, whatever moves; the amount is capped to the unclaimed escrow; a
    /// pending withdrawal shrinks by what was refunded (cancelled when the refund covers it).
    function _refund(ChannelConfig calldata config, bytes32 channelId, uint128 amount) private {
        uint256 nonce = refundNonce[channelId]++;
        Channel storage ch = channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 actual = amount < available ? amount : available;
        if (actual == 0) return;
        ch.balance -= actual;
        PendingWithdrawal storage w = pendingWithdrawals[channelId];
        if (w.initiatedAt != 0) {
            if (actual >= w.amount) delete pendingWithdrawals[channelId];
            else w.amount -= actual;
        }
        IERC20(config.token).safeTransfer(config.payer, actual);
        emit Refunded(channelId, nonce, actual);
        if (ch.balance == ch.totalClaimed && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
    }

    // ---- timed withdrawal ----

    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        _checkPayerSide(config);
        bytes32 channelId = getChannelId(config);
        if (amount == 0) revert ZeroAmount();
        if (pendingWithdrawals[channelId].initiatedAt != 0) revert WithdrawAlreadyPending();
        Channel storage ch = channels[channelId];
        if (amount > ch.balance - ch.totalClaimed) revert WithdrawExceedsAvailable();
        pendingWithdrawals[channelId] = PendingWithdrawal(amount, uint40(block.timestamp));
        emit WithdrawInitiated(channelId, amount, uint40(block.timestamp));
    }

    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        _checkPayerSide(config);
        bytes32 channelId = getChannelId(config);
        PendingWithdrawal memory w = pendingWithdrawals[channelId];
        if (w.initiatedAt == 0) revert NoPendingWithdraw();
        if (block.timestamp < uint256(w.initiatedAt) + config.withdrawDelay) revert WithdrawTooEarly();
        delete pendingWithdrawals[channelId];
        Channel storage ch = channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 actual = w.amount < available ? w.amount : available;
        ch.balance -= actual;
        if (actual > 0) IERC20(config.token).safeTransfer(config.payer, actual);
        emit WithdrawFinalized(channelId, actual);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
    }

    // ---- checks ----

    function _checkConfig(ChannelConfig calldata config) private pure {
        if (config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0) || config.token == address(0)) {
            revert InvalidChannelConfig();
        }
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) revert WithdrawDelayOutOfRange();
    }

    function _checkPayerSide(ChannelConfig calldata config) private view {
        if (msg.sender != config.payer && (config.payerAuthorizer == address(0) || msg.sender != config.payerAuthorizer)) revert Unauthorized();
    }

    /// A set payer authorizer is an EOA (ECDSA only); a zero one defers to the payer (ERC-1271 for contracts).
    function _checkVoucher(ChannelConfig calldata config, bytes32 channelId, uint128 maxClaimableAmount, bytes calldata signature) private view {
        bytes32 digest = getVoucherDigest(channelId, maxClaimableAmount);
        bool ok;
        if (config.payerAuthorizer != address(0)) {
            (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, signature);
            ok = err == ECDSA.RecoverError.NoError && recovered == config.payerAuthorizer;
        } else {
            ok = SignatureChecker.isValidSignatureNow(config.payer, digest, signature);
        }
        if (!ok) revert InvalidVoucherSignature(channelId);
    }
}
