// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";
import {TestSmartWallet} from "./TestSmartWallet.sol";

/// @notice An ERC-6492-style counterfactual wallet factory: the wallet's address is known
/// before deployment, and `createAccount` deploys it (or returns it when it already exists).
contract TestWalletFactory {
    function createAccount(address owner, bytes32 salt) external returns (address wallet) {
        wallet = getAddress(owner, salt);
        if (wallet.code.length == 0) new TestSmartWallet{salt: salt}(owner);
    }

    function getAddress(address owner, bytes32 salt) public view returns (address) {
        bytes32 initCodeHash = keccak256(abi.encodePacked(type(TestSmartWallet).creationCode, abi.encode(owner)));
        return Create2.computeAddress(salt, initCodeHash);
    }
}
