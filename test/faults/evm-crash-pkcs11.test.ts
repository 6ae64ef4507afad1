import { evmCrashPoints } from './evm-crash.js';

// The crash points of a first send (signed, saved, broadcast) with the relayer's key on a PKCS#11
// token (SoftHSM); the other paths sign the same way and run with the keystore signer.
evmCrashPoints('pglite', { signer: 'pkcs11', actions: ['send'] });
