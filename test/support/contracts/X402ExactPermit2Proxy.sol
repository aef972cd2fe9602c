// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "X402Permit2ProxyBase.sol";

/// A test version of the x402 exact Permit2 proxy, written from the public x402 spec: it moves exactly
/// `permitted.amount` to `witness.to`, with Permit2 checking the owner's signature over the witness
/// (so the facilitator cannot redirect a payment), and refuses to run before `witness.validAfter`.
contract X402ExactPermit2Proxy is X402Permit2ProxyBase {
    struct Witness {
        address to;
        uint256 validAfter;
    }

    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,uint256 validAfter)");
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)";

    function settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _settle(permit, owner, witness, signature);
    }

    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransfer.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _runPermit2612(permit2612, permit, owner);
        _settle(permit, owner, witness, signature);
    }

    function _settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        _checkParties(owner, witness.to);
        if (permit.permitted.amount == 0) revert InvalidAmount();
        _checkNotEarly(witness.validAfter);
        _transfer(
            permit, owner, witness.to, permit.permitted.amount,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.validAfter)), WITNESS_TYPE_STRING, signature
        );
    }
}
