// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// @notice A test stand-in for USDC (FiatTokenV2_2): 6 decimals, an EIP-712 domain
/// chosen at deployment (USDC's is "USD Coin" / "2"), EIP-3009 transferWithAuthorization
/// in the (v,r,s) and the `bytes signature` (ERC-1271 aware) overloads, EIP-2612 `permit` over the same
/// domain (as USDC has it), and USDC's revert strings.
/// v2.2 checks a (v,r,s) signature as the packed bytes, so smart wallets pass there too;
/// with `vrsRecoversOnly` it only recovers it, as FiatToken v2.0 and v2.1 did.
/// Anyone may mint: it only ever runs on a local test chain. Both overloads are virtual for
/// TestGasBurningToken.
contract TestUSDC is ERC20, EIP712, Nonces {
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    bytes32 public constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    mapping(address => mapping(bytes32 => bool)) private _authorizationStates;

    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);

    bool public immutable vrsRecoversOnly;

    constructor(string memory name_, string memory version_, bool vrsRecoversOnly_) ERC20(name_, "USDC") EIP712(name_, version_) {
        vrsRecoversOnly = vrsRecoversOnly_;
    }

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    /// EIP-2612: sets `owner`'s allowance to `spender` from a signature of the owner (USDC's revert strings).
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external {
        require(deadline >= block.timestamp, "FiatTokenV2: permit is expired");
        bytes32 digest = _hashTypedDataV4(keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, _useNonce(owner), deadline)));
        require(SignatureChecker.isValidSignatureNow(owner, digest, abi.encodePacked(r, s, v)), "EIP2612: invalid signature");
        _approve(owner, spender, value);
    }

    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        uint8 v, bytes32 r, bytes32 s
    ) public virtual {
        bytes32 digest = _checkAuthorization(from, to, value, validAfter, validBefore, nonce);
        if (vrsRecoversOnly) {
            (address recovered, ECDSA.RecoverError error,) = ECDSA.tryRecover(digest, v, r, s);
            require(error == ECDSA.RecoverError.NoError && recovered == from, "FiatTokenV2: invalid signature");
        } else {
            require(SignatureChecker.isValidSignatureNow(from, digest, abi.encodePacked(r, s, v)), "FiatTokenV2: invalid signature");
        }
        _useAuthorization(from, to, value, nonce);
    }

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        bytes memory signature
    ) public virtual {
        bytes32 digest = _checkAuthorization(from, to, value, validAfter, validBefore, nonce);
        require(SignatureChecker.isValidSignatureNow(from, digest, signature), "FiatTokenV2: invalid signature");
        _useAuthorization(from, to, value, nonce);
    }

    /// EIP-3009 receiveWithAuthorization (bytes overload): only the payee may submit it (the batch-settlement
    /// EIP-3009 deposit collector does), so a front-runner cannot spend the authorization elsewhere.
    function receiveWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        bytes memory signature
    ) public virtual {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        bytes32 digest = _checkAuthorizationOf(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce);
        require(SignatureChecker.isValidSignatureNow(from, digest, signature), "FiatTokenV2: invalid signature");
        _useAuthorization(from, to, value, nonce);
    }

    function _checkAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce
    ) private view returns (bytes32) {
        return _checkAuthorizationOf(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce);
    }

    function _checkAuthorizationOf(
        bytes32 typehash, address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce
    ) private view returns (bytes32) {
        require(block.timestamp > validAfter, "FiatTokenV2: authorization is not yet valid");
        require(block.timestamp < validBefore, "FiatTokenV2: authorization is expired");
        require(!_authorizationStates[from][nonce], "FiatTokenV2: authorization is used or canceled");
        return _hashTypedDataV4(
            keccak256(abi.encode(typehash, from, to, value, validAfter, validBefore, nonce))
        );
    }

    function _useAuthorization(address from, address to, uint256 value, bytes32 nonce) private {
        require(balanceOf(from) >= value, "ERC20: transfer amount exceeds balance");
        _authorizationStates[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }
}
