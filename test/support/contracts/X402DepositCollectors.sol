// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IDepositCollector} from "./X402BatchSettlement.sol";

/// EIP-3009 `receiveWithAuthorization` (the bytes-signature overload, ERC-1271 aware).
interface IERC3009Receive {
    function receiveWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes memory signature
    ) external;
}

/// Permit2's SignatureTransfer, as the collector calls it.
interface IPermit2Witness {
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

interface IERC20Permit2612 {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
}

/// What both collectors share: only the settlement contract at its canonical address may call them,
/// so nobody can spend a payer's signed authorization outside a deposit credited to its channel.
abstract contract X402DepositCollectorBase is IDepositCollector {
    address public constant SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    error OnlySettlement();

    modifier onlySettlement() {
        if (msg.sender != SETTLEMENT) revert OnlySettlement();
        _;
    }
}

/// Collects a deposit with the payer's ReceiveWithAuthorization to this collector, whose nonce is
/// keccak256(abi.encode(channelId, salt)) (binding it to one channel); data is
/// abi.encode(validAfter, validBefore, salt, signature).
contract X402Erc3009DepositCollector is X402DepositCollectorBase {
    using SafeERC20 for IERC20;

    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data) external onlySettlement {
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) = abi.decode(data, (uint256, uint256, uint256, bytes));
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009Receive(token).receiveWithAuthorization(payer, address(this), amount, validAfter, validBefore, nonce, signature);
        IERC20(token).safeTransfer(msg.sender, amount);
    }
}

/// Collects a deposit through Permit2's permitWitnessTransferFrom with a DepositWitness(bytes32 channelId),
/// straight into the settlement contract; data is abi.encode(nonce, deadline, permit2Signature, eip2612PermitData),
/// where a non-empty eip2612PermitData = abi.encode(value, deadline, v, r, s) runs the token's permit to
/// Permit2 first (in a try/catch: a used or front-run permit leaves the allowance the payer already has);
/// its value must be the deposit amount.
contract X402Permit2DepositCollector is X402DepositCollectorBase {
    IPermit2Witness public constant PERMIT2 = IPermit2Witness(0x000000000022D473030F116dDEE9F6B43aC78BA3);
    bytes32 public constant DEPOSIT_WITNESS_TYPEHASH = keccak256("DepositWitness(bytes32 channelId)");
    string public constant WITNESS_TYPE_STRING =
        "DepositWitness witness)DepositWitness(bytes32 channelId)TokenPermissions(address token,uint256 amount)";

    error Permit2612AmountMismatch();
    /// The token's permit reverted (used, front-run, expired or forged); the Permit2 transfer still runs.
    event EIP2612PermitFailed(address indexed token, address indexed owner, bytes reason);

    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data) external onlySettlement {
        (uint256 nonce, uint256 deadline, bytes memory signature, bytes memory permit2612) = abi.decode(data, (uint256, uint256, bytes, bytes));
        if (permit2612.length > 0) _permit2612(payer, token, amount, permit2612);
        PERMIT2.permitWitnessTransferFrom(
            IPermit2Witness.PermitTransferFrom(IPermit2Witness.TokenPermissions(token, amount), nonce, deadline),
            IPermit2Witness.SignatureTransferDetails(msg.sender, amount),
            payer,
            keccak256(abi.encode(DEPOSIT_WITNESS_TYPEHASH, channelId)),
            WITNESS_TYPE_STRING,
            signature
        );
    }

    function _permit2612(address payer, address token, uint256 amount, bytes memory data) private {
        (uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) = abi.decode(data, (uint256, uint256, uint8, bytes32, bytes32));
        if (value != amount) revert Permit2612AmountMismatch();
        try IERC20Permit2612(token).permit(payer, address(PERMIT2), value, deadline, v, r, s) {}
        catch (bytes memory reason) {
            emit EIP2612PermitFailed(token, payer, reason);
        }
    }
}
