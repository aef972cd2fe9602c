// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// The part of Uniswap's Permit2 the proxies call (SignatureTransfer).
interface ISignatureTransfer {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }
    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }
    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;
}

/// EIP-2612 `permit`, run by `settleWithPermit` before the transfer.
interface IERC20Permit {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
}

/// What the test versions of the x402 exact and upto Permit2 proxies share, written from the public x402
/// spec: Permit2's address, the errors and the event, the EIP-2612 permit `settleWithPermit` runs first,
/// and the transfer through Permit2, which checks the owner's signature over the witness and spends the nonce.
abstract contract X402Permit2ProxyBase {
    ISignatureTransfer public constant PERMIT2 = ISignatureTransfer(0x000000000022D473030F116dDEE9F6B43aC78BA3);

    error InvalidAmount();
    error InvalidDestination();
    error InvalidOwner();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    event Settled(address indexed owner, address indexed to, address token, uint256 amount);

    /// The token's EIP-2612 `permit` (owner -> Permit2, exactly `permitted.amount`), in a try/catch: a payer
    /// without a Permit2 allowance pays in the same transaction, and a permit that fails (already used,
    /// front-run) leaves the transfer to the allowance the payer already has.
    function _runPermit2612(EIP2612Permit calldata permit2612, ISignatureTransfer.PermitTransferFrom calldata permit, address owner) internal {
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        try IERC20Permit(permit.permitted.token).permit(
            owner, address(PERMIT2), permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s
        ) {} catch {}
    }

    function _checkParties(address owner, address to) internal pure {
        if (owner == address(0)) revert InvalidOwner();
        if (to == address(0)) revert InvalidDestination();
    }

    function _checkNotEarly(uint256 validAfter) internal view {
        if (block.timestamp < validAfter) revert PaymentTooEarly();
    }

    /// Moves `amount` from `owner` to `to` through Permit2, against the owner's signature over `witness`.
    function _transfer(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        address owner,
        address to,
        uint256 amount,
        bytes32 witness,
        string memory witnessTypeString,
        bytes calldata signature
    ) internal {
        PERMIT2.permitWitnessTransferFrom(
            permit, ISignatureTransfer.SignatureTransferDetails({to: to, requestedAmount: amount}), owner, witness, witnessTypeString, signature
        );
        emit Settled(owner, to, permit.permitted.token, amount);
    }
}
