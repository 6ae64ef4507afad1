import { evmCrashPoints } from './evm-crash.js';

// The same crash points with the relayer's key on a PKCS#11 token (SoftHSM): first sends and resubmissions.
evmCrashPoints('pglite', { signer: 'pkcs11', actions: ['send', 'resubmit'] });
