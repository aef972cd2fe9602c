// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "X402Permit2ProxyBase.sol";

/// A test version of the x402 upto Permit2 proxy, written from the public x402 spec: the facilitator the
/// payer named in the witness (and only it) moves `amount <= permitted.amount` to `witness.to`; Permit2
/// checks the owner's signature over the witness and spends the nonce.
contract X402UptoPermit2Proxy is X402Permit2ProxyBase {
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";

    error AmountExceedsPermitted();
    error UnauthorizedFacilitator();

    function settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _settle(permit, amount, owner, witness, signature);
    }

    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _runPermit2612(permit2612, permit, owner);
        _settle(permit, amount, owner, witness, signature);
    }

    function _settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
        _checkParties(owner, witness.to);
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        _checkNotEarly(witness.validAfter);
        _transfer(
            permit, owner, witness.to, amount,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter)), WITNESS_TYPE_STRING, signature
        );
    }
}
