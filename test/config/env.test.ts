// Environment variables read once at start-up: here, the FeeForwarder contracts of gasless Soroban calls.
import { describe, expect, it } from 'vitest';
import { EnvError, parseEnv } from '../../src/config/env.js';

const FORWARDER = 'CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA';

describe('the Stellar FeeForwarder variables', () => {
  it("are read by the reference's names, per kind of network, with no default", () => {
    expect(parseEnv({}).stellarFeeForwarder).toEqual({ mainnet: undefined, testnet: undefined });
    expect(parseEnv({ STELLAR_TESTNET_FEE_FORWARDER_ADDRESS: FORWARDER }).stellarFeeForwarder).toEqual({ mainnet: undefined, testnet: FORWARDER });
    expect(parseEnv({ STELLAR_MAINNET_FEE_FORWARDER_ADDRESS: FORWARDER }).stellarFeeForwarder.mainnet).toBe(FORWARDER);
  });

  it('refuses anything but a contract address, naming the variable', () => {
    expect(() => parseEnv({ STELLAR_TESTNET_FEE_FORWARDER_ADDRESS: 'GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA' })).toThrow(EnvError);
    expect(() => parseEnv({ STELLAR_MAINNET_FEE_FORWARDER_ADDRESS: 'forwarder' })).toThrow(
      /STELLAR_MAINNET_FEE_FORWARDER_ADDRESS: must be a C… contract address/,
    );
  });
});
