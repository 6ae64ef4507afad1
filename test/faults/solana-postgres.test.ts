import { postgresReachable } from '../support/postgres.js';
import { solanaCrashPoints } from './solana.js';

solanaCrashPoints('postgres', await postgresReachable());
