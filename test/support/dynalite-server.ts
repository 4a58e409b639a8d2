/** Tests start dynalite themselves, in memory, on an ephemeral port. */
export { startDynalite, type DynaliteServer } from '../../shared/local/dynalite.js';
