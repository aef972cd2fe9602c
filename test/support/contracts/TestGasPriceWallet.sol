// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @notice An attacker's ERC-1271 wallet that tells simulations from real transactions: its
/// owner's signatures are valid only while `tx.gasprice` is 0, which is the case in an
/// `eth_call` or `eth_estimateGas` sent without fee fields, and never in a mined transaction.
/// A facilitator that simulates without the fees it will pay sees a valid payment and then
/// pays for a transfer that reverts, again and again (the authorization nonce is never spent).
contract TestGasPriceWallet is IERC1271 {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address recovered, ECDSA.RecoverError error,) = ECDSA.tryRecover(hash, signature);
        if (tx.gasprice == 0 && error == ECDSA.RecoverError.NoError && recovered == owner) return IERC1271.isValidSignature.selector;
        return 0xffffffff;
    }
}
