import { postgresReachable } from '../support/postgres.js';
import { stellarCrashPoints } from './stellar.js';

stellarCrashPoints('postgres', await postgresReachable());
