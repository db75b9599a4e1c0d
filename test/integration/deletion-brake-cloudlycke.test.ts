/** The deletion brake on cloudlycke: `ccm nodes init` and `ccm run` (test/helpers/deletion-brake.ts). */
import { deletionBrakeTests } from '../helpers/deletion-brake.js';

deletionBrakeTests('cloudlycke');
