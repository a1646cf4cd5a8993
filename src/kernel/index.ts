/**
 * The kernel is the Python program that runs inside every sandbox
 * (sandcell_kernel.py, beside this file in both src/ and dist/).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const kernelDirectory = path.dirname(fileURLToPath(import.meta.url));

export const KERNEL_PROTOCOL_VERSION = 1;
