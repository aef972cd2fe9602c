// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TestUSDC} from "./TestUSDC.sol";

/// @notice An attacker's EIP-3009 token: a TestUSDC whose transferWithAuthorization first burns
/// `burnGas` gas, which a facilitator settling a payment in it would pay for. The burn runs out of
/// gas like real work does (no revert of its own), so a transaction with too low a limit fails the
/// way it would on chain.
contract TestGasBurningToken is TestUSDC {
    uint256 public immutable burnGas;

    constructor(string memory name_, string memory version_, uint256 burnGas_) TestUSDC(name_, version_, false) {
        burnGas = burnGas_;
    }

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        uint8 v, bytes32 r, bytes32 s
    ) public override {
        _burn();
        super.transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, v, r, s);
    }

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        bytes memory signature
    ) public override {
        _burn();
        super.transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, signature);
    }

    function _burn() private view {
        uint256 start = gasleft();
        // With less gas than the burn, the loop runs until the call is out of gas.
        uint256 until = start > burnGas ? start - burnGas : 0;
        while (gasleft() > until) {}
    }
}
