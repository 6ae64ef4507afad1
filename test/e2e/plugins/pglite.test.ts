import { pluginSuite } from './suite.js';

pluginSuite('pglite');
