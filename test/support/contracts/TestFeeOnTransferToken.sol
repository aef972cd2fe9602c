// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {TestUSDC} from "./TestUSDC.sol";

/// @notice A fee-on-transfer token: a TestUSDC (EIP-3009 in both overloads, EIP-2612 permit, ERC-20
/// approve and transferFrom for Permit2) that burns `feePercent` % of every transfer between two
/// accounts, so the recipient gets the rest (with 10 %, a payment of 1,000 lands 900). Minting and
/// burning take no fee. Anyone may change the fee: a test turns it on between a verify and a settle.
contract TestFeeOnTransferToken is TestUSDC {
    uint256 public feePercent;

    constructor(string memory name_, string memory version_, uint256 feePercent_) TestUSDC(name_, version_, false) {
        feePercent = feePercent_;
    }

    function setFeePercent(uint256 feePercent_) external {
        require(feePercent_ <= 100, "fee above 100%");
        feePercent = feePercent_;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (from == address(0) || to == address(0) || feePercent == 0) {
            super._update(from, to, value);
            return;
        }
        uint256 fee = (value * feePercent) / 100;
        super._update(from, address(0), fee);
        super._update(from, to, value - fee);
    }
}
