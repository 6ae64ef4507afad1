import { evmCrashPoints } from './evm-crash.js';

evmCrashPoints('pglite');
