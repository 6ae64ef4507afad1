import { solanaCrashPoints } from './solana.js';

solanaCrashPoints('pglite');
