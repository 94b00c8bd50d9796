/** The simulator's seeded random source, which tests use too. */
export { seededRandom } from '../../sim/random.js';
