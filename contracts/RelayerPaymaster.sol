// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IEntryPoint} from "@account-abstraction/contracts/interfaces/IEntryPoint.sol";
import {IPaymaster} from "@account-abstraction/contracts/interfaces/IPaymaster.sol";
import {PackedUserOperation} from "@account-abstraction/contracts/interfaces/PackedUserOperation.sol";

/// @title The relayer's verifying paymaster
/// @notice Pays for a UserOperation (from its deposit at one EntryPoint) when the relayer's signer
/// approved that operation for this paymaster, on this chain, within a validity window.
///
/// paymasterAndData = paymaster (20) | paymasterVerificationGasLimit (16) | postOpGasLimit (16)
///                  | validUntil (6) | validAfter (6) | signature (65: r, s, v)
///
/// The signature is EIP-712 over `Approval`, domain {name "RelayerPaymaster", version "1", chainId,
/// verifyingContract: this paymaster}: an approval is worth nothing on another chain or for another
/// paymaster. It covers every field of the operation that sets what it does and what it may cost,
/// except the account's own signature and the paymaster's signature itself.
///
/// Validation reads no storage (owner, signer and EntryPoint are immutable) and no block values: the
/// window is returned to the EntryPoint in validationData, which enforces it (ERC-7562 rules).
contract RelayerPaymaster is IPaymaster {
    IEntryPoint public immutable entryPoint;
    /// The account that may withdraw the deposit and manage the stake: the relayer's account.
    address public immutable owner;
    /// The key whose approvals this paymaster honours: the relayer's signer.
    address public immutable signer;

    uint256 private constant DATA_OFFSET = 52;
    uint256 private constant DATA_LENGTH = 12 + 65;
    uint256 private constant SIG_VALIDATION_FAILED = 1;
    /// secp256k1n / 2: signatures with a higher s are the malleable twin of a valid one.
    uint256 private constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant APPROVAL_TYPEHASH = keccak256(
        "Approval(address sender,uint256 nonce,bytes initCode,bytes callData,bytes32 accountGasLimits,bytes32 paymasterGasLimits,uint256 preVerificationGas,bytes32 gasFees,uint48 validUntil,uint48 validAfter)"
    );

    error NotEntryPoint();
    error NotOwner();
    error BadPaymasterData(uint256 length);

    constructor(IEntryPoint entryPoint_, address owner_, address signer_) {
        entryPoint = entryPoint_;
        owner = owner_;
        signer = signer_;
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    function validatePaymasterUserOp(PackedUserOperation calldata op, bytes32, uint256)
        external
        view
        returns (bytes memory context, uint256 validationData)
    {
        if (msg.sender != address(entryPoint)) revert NotEntryPoint();
        bytes calldata pnd = op.paymasterAndData;
        if (pnd.length != DATA_OFFSET + DATA_LENGTH) revert BadPaymasterData(pnd.length);
        uint48 validUntil = uint48(bytes6(pnd[DATA_OFFSET:DATA_OFFSET + 6]));
        uint48 validAfter = uint48(bytes6(pnd[DATA_OFFSET + 6:DATA_OFFSET + 12]));
        bool approved = _recover(approvalDigest(op, validUntil, validAfter), pnd[DATA_OFFSET + 12:]) == signer;
        validationData = (approved ? 0 : SIG_VALIDATION_FAILED) | (uint256(validUntil) << 160) | (uint256(validAfter) << 208);
        return ("", validationData);
    }

    /// Never called: validation returns no context, so the EntryPoint skips postOp.
    function postOp(PostOpMode, bytes calldata, uint256, uint256) external view {
        if (msg.sender != address(entryPoint)) revert NotEntryPoint();
    }

    /// The digest the signer signs for `op` (its paymasterAndData must carry this paymaster's gas limits).
    function approvalDigest(PackedUserOperation calldata op, uint48 validUntil, uint48 validAfter)
        public
        view
        returns (bytes32)
    {
        bytes32 structHash = keccak256(
            abi.encode(
                APPROVAL_TYPEHASH,
                op.sender,
                op.nonce,
                keccak256(op.initCode),
                keccak256(op.callData),
                op.accountGasLimits,
                bytes32(op.paymasterAndData[20:DATA_OFFSET]),
                op.preVerificationGas,
                op.gasFees,
                validUntil,
                validAfter
            )
        );
        return keccak256(abi.encodePacked(hex"1901", domainSeparator(), structHash));
    }

    function domainSeparator() public view returns (bytes32) {
        return keccak256(
            abi.encode(DOMAIN_TYPEHASH, keccak256("RelayerPaymaster"), keccak256("1"), block.chainid, address(this))
        );
    }

    /// Anyone may add to the deposit; only the owner takes it out.
    function deposit() external payable {
        entryPoint.depositTo{value: msg.value}(address(this));
    }

    function getDeposit() external view returns (uint256) {
        return entryPoint.balanceOf(address(this));
    }

    function withdrawTo(address payable to, uint256 amount) external onlyOwner {
        entryPoint.withdrawTo(to, amount);
    }

    function addStake(uint32 unstakeDelaySec) external payable onlyOwner {
        entryPoint.addStake{value: msg.value}(unstakeDelaySec);
    }

    function unlockStake() external onlyOwner {
        entryPoint.unlockStake();
    }

    function withdrawStake(address payable to) external onlyOwner {
        entryPoint.withdrawStake(to);
    }

    /// address(0) for anything but a well-formed, non-malleable 65-byte signature.
    function _recover(bytes32 digest, bytes calldata sig) private pure returns (address) {
        if (sig.length != 65) return address(0);
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        if (uint256(s) > HALF_N || (v != 27 && v != 28)) return address(0);
        return ecrecover(digest, v, r, s);
    }
}
