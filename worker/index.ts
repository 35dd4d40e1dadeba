/** Worker process entry: `npm run worker`. */
import { exitOnError, runWorkerProcess } from './run';

runWorkerProcess().catch(exitOnError);
