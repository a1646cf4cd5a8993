/**
 * The kernel is the Python program that runs inside every sandbox
 * (sandcell_kernel.py, beside this file in both src/ and dist/), and the
 * seccomp filter every backend applies (seccomp_filter.py).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const kernelDirectory = path.dirname(fileURLToPath(import.meta.url));

/** The program inside the sandbox, beside this file. */
export const KERNEL_SCRIPT = 'sandcell_kernel.py';

/** sandcell's seccomp filter (python3-seccomp): compiled to BPF for bwrap, or loaded in place in a container. */
export const SECCOMP_SCRIPT = path.join(kernelDirectory, 'seccomp_filter.py');

export const KERNEL_PROTOCOL_VERSION = 1;
