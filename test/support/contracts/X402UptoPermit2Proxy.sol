// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface ISignatureTransferUpto {
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

interface IERC20PermitUpto {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
}

/// A test version of the x402 upto Permit2 proxy, written from the public x402 spec: the facilitator the
/// payer named in the witness (and only it) moves `amount <= permitted.amount` to `witness.to`; Permit2
/// checks the owner's signature over the witness and spends the nonce. `settleWithPermit` first runs the
/// token's EIP-2612 `permit` (owner -> Permit2, exactly `permitted.amount`) in a try/catch.
contract X402UptoPermit2Proxy {
    ISignatureTransferUpto public constant PERMIT2 = ISignatureTransferUpto(0x000000000022D473030F116dDEE9F6B43aC78BA3);

    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";

    error InvalidAmount();
    error InvalidDestination();
    error InvalidOwner();
    error PaymentTooEarly();
    error AmountExceedsPermitted();
    error UnauthorizedFacilitator();
    error Permit2612AmountMismatch();

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    event Settled(address indexed owner, address indexed to, address token, uint256 amount);

    function settle(
        ISignatureTransferUpto.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _settle(permit, amount, owner, witness, signature);
    }

    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransferUpto.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        try IERC20PermitUpto(permit.permitted.token).permit(
            owner, address(PERMIT2), permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s
        ) {} catch {}
        _settle(permit, amount, owner, witness, signature);
    }

    function _settle(
        ISignatureTransferUpto.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        PERMIT2.permitWitnessTransferFrom(
            permit,
            ISignatureTransferUpto.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
        emit Settled(owner, witness.to, permit.permitted.token, amount);
    }
}
