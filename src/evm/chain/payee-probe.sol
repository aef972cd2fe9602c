// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice Never deployed. `eth_call` places this code at the settling signer's own address (a state
/// override) and calls it from that signer, so every call it makes has the signer as `msg.sender` and
/// `tx.origin`, as the settlement transaction will: it runs the settlement's calls in order and reads
/// the payee's token balance before and after them, in one simulated execution.
/// The facilitator embeds the runtime code (src/evm/chain/payee-probe.ts); test/evm/payee-credit.test.ts
/// compiles this file (evmVersion paris, optimizer 200 runs, no metadata) and checks the two match.
contract PayeeProbe {
    struct Call {
        address target;
        bytes data;
    }

    /// The token does not answer `balanceOf(payee)` with a 32-byte word.
    error BalanceUnreadable();

    /// Runs `calls` in order (a failing call reverts with its own revert data) between two reads of
    /// `payee`'s balance of `token`.
    function probe(address token, address payee, Call[] calldata calls) external returns (uint256 before, uint256 afterwards) {
        before = balanceOf(token, payee);
        for (uint256 i; i < calls.length; ++i) {
            (bool ok, bytes memory returned) = calls[i].target.call(calls[i].data);
            if (!ok) {
                assembly {
                    revert(add(returned, 32), mload(returned))
                }
            }
        }
        afterwards = balanceOf(token, payee);
    }

    function balanceOf(address token, address owner) private view returns (uint256) {
        (bool ok, bytes memory returned) = token.staticcall(abi.encodeWithSelector(0x70a08231, owner));
        if (!ok || returned.length < 32) revert BalanceUnreadable();
        return abi.decode(returned, (uint256));
    }
}
