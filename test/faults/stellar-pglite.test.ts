import { stellarCrashPoints } from './stellar.js';

stellarCrashPoints('pglite');
