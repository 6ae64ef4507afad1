import { postgresReachable } from '../support/postgres.js';
import { evmCrashPoints } from './evm-crash.js';

evmCrashPoints('postgres', { run: await postgresReachable() });
