import type { CustodyType } from './custody.js';
import { awsKms } from './aws-kms/index.js';
import { azureKeyVault } from './azure-key-vault/index.js';
import { cdp } from './cdp/index.js';
import { googleCloudKms } from './google-cloud-kms/index.js';
import { pkcs11 } from './pkcs11/index.js';
import { turnkey } from './turnkey/index.js';
import { vault } from './vault/index.js';
import { vaultTransit } from './vault-transit/index.js';

/** The signer types offered besides `local` and `plain`: each a key custody behind signers/custody.ts. */
export const CUSTODY_TYPES: readonly CustodyType[] = [pkcs11, vault, vaultTransit, awsKms, googleCloudKms, azureKeyVault, turnkey, cdp];
