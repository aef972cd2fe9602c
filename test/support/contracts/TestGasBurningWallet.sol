// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";
import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @notice An attacker's ERC-1271 wallet: its owner's signatures are valid, but every
/// `isValidSignature` first burns gas (`rounds` hashes), which a facilitator settling
/// the wallet's payment would pay for.
contract TestGasBurningWallet is IERC1271 {
    address public immutable owner;
    uint256 public immutable rounds;

    constructor(address owner_, uint256 rounds_) {
        owner = owner_;
        rounds = rounds_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        bytes32 burnt = hash;
        for (uint256 i = 0; i < rounds; i++) burnt = keccak256(abi.encode(burnt, i));
        (address recovered, ECDSA.RecoverError error,) = ECDSA.tryRecover(hash, signature);
        // `burnt` is never zero in practice; reading it keeps the loop from being optimized away.
        if (burnt != bytes32(0) && error == ECDSA.RecoverError.NoError && recovered == owner) return IERC1271.isValidSignature.selector;
        return 0xffffffff;
    }
}

/// @notice An ERC-6492 factory of gas-burning wallets, like TestWalletFactory.
contract TestGasBurningWalletFactory {
    uint256 public immutable rounds;

    constructor(uint256 rounds_) {
        rounds = rounds_;
    }

    function createAccount(address owner, bytes32 salt) external returns (address wallet) {
        wallet = getAddress(owner, salt);
        if (wallet.code.length == 0) new TestGasBurningWallet{salt: salt}(owner, rounds);
    }

    function getAddress(address owner, bytes32 salt) public view returns (address) {
        bytes32 initCodeHash = keccak256(abi.encodePacked(type(TestGasBurningWallet).creationCode, abi.encode(owner, rounds)));
        return Create2.computeAddress(salt, initCodeHash);
    }
}
